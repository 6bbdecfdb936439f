"""Settings of the BitTorrent service (DEPENDENCIES.md: libtorrent traps)."""
from __future__ import annotations

from dataclasses import dataclass, field

from core.archive.constants import DEFAULT_TRACKERS
from core.archive.diskio import DISK_MARGIN
from core.torrent.magnet import format_peer


@dataclass
class TorrentSettings:
    """Real networks: the defaults. Tests: `TorrentSettings.loopback()` (no DHT/LSD/UPnP/NAT-PMP, TCP only)."""

    listen_host: str = "0.0.0.0"
    listen_port: int = 0                 # 0: pick a free port, so that two instances can run side by side
    dht: bool = True
    lsd: bool = True
    upnp: bool = True
    natpmp: bool = True
    utp: bool = True                     # uTP on loopback runs at ~11 MiB/s; tests turn it off
    trackers: tuple[str, ...] = DEFAULT_TRACKERS
    metadata_timeout: float = 20.0       # status-go: 20 s per attempt ...
    metadata_retries: int = 1            # ... and one retry
    # a peer that refused us (e.g. the owner's seeding had not started yet) is tried again after this many seconds
    # times (its failures + 1); libtorrent's own 60 s outlasted both metadata attempts, and connect_peer() at the
    # retry does not override it (docs/TORRENT.md)
    reconnect_seconds: int = 5
    status_interval: float = 1.0         # post_torrent_updates period
    resume_interval: float = 10.0        # short timer for resume data
    tcp_nodelay: bool = True             # Nagle off on libtorrent's peer sockets (nodelay.py: 40 ms stalls)
    upload_rate_limit: int = 0           # bytes/s per torrent, 0 = unlimited
    download_rate_limit: int = 0
    max_torrent_bytes: int = 1 << 40     # a torrent claiming more is refused (sane sizes)
    disk_margin: int = DISK_MARGIN       # free space kept on top of what a download needs (the builds' margin)
    extra: dict = field(default_factory=dict)  # raw libtorrent settings_pack overrides

    @classmethod
    def loopback(cls, **kw) -> "TorrentSettings":
        base = dict(listen_host="127.0.0.1", dht=False, lsd=False, upnp=False, natpmp=False, utp=False,
                    trackers=())
        base.update(kw)
        return cls(**base)

    def settings_pack(self) -> dict:
        import libtorrent as lt
        cat = lt.alert.category_t
        mask = (cat.error_notification | cat.status_notification | cat.storage_notification
                | cat.piece_progress_notification | cat.connect_notification | cat.port_mapping_notification
                | cat.peer_notification)
        pack = {
            "listen_interfaces": format_peer(self.listen_host, self.listen_port),   # [v6]:port, as libtorrent wants
            "enable_dht": self.dht,
            "enable_lsd": self.lsd,
            "enable_upnp": self.upnp,
            "enable_natpmp": self.natpmp,
            "enable_outgoing_utp": self.utp,
            "enable_incoming_utp": self.utp,
            "alert_mask": int(mask),
            "alert_queue_size": 100_000,
            # the first block otherwise waits ~1 s (DEPENDENCIES.md)
            "close_redundant_connections": False,
            # several peers on 127.0.0.1 would otherwise make libtorrent ban the address
            "allow_multiple_connections_per_ip": True,
            "min_reconnect_time": self.reconnect_seconds,
            "user_agent": "archivist",
        }
        pack.update(self.extra)
        return pack
