"""Control side: seed the newest torrent of a community in seed mode, drop the previous one, report a state
that means something (seeding with peers / idle / not reachable / error)."""
from __future__ import annotations

import threading
from pathlib import Path

import libtorrent as lt

from core.archive.constants import DATA_FILE, INDEX_FILE
from core.archive.errors import InvalidTorrent
from core.archive.torrent import parse_metainfo
from core.torrent import events as ev

SEEDING_WITH_PEERS = "seeding-with-peers"
IDLE = "idle"                      # seeding, no peer connected
NOT_REACHABLE = "not-reachable"    # cannot listen, or port mapping failed and nobody ever connected in
ERROR = "error"
STARTING = "starting"              # added; libtorrent turns peers away (torrent_not_ready) until its check is done
STOPPED = "stopped"
STATES = (STARTING, IDLE, SEEDING_WITH_PEERS, NOT_REACHABLE, ERROR, STOPPED)   # core.node.state.seeding_state maps each


class SeededTorrent:
    def __init__(self, service, community_id: str, data_dir: Path, raw: bytes):
        self.service = service
        self.community_id = community_id
        self.data_dir = data_dir
        self.raw = raw
        self.infohash = ""
        self.handle = None
        self.state = STARTING
        self.message = ""
        self.peers = 0
        self.uploaded = 0            # payload bytes this session
        self.upload_rate = 0
        self.has_incoming = False
        self.magnet = ""
        self.ready = threading.Event()   # set once libtorrent accepts peers for it (or it failed)

    def start(self) -> "SeededTorrent":
        """Alert thread."""
        mi = parse_metainfo(self.raw, expected_name=self.community_id)
        folder = self.data_dir / self.community_id
        for name in (DATA_FILE, INDEX_FILE):
            size = (folder / name).stat().st_size if (folder / name).exists() else -1
            if size != mi.file_length(name):
                raise InvalidTorrent(f"{folder / name} is {size} bytes, the torrent says {mi.file_length(name)}",
                                     code="seed-files-mismatch")
        self.magnet = mi.magnet()
        previous = self.service.seeds.get(self.community_id)
        if previous is not None and previous.infohash != mi.infohash:
            previous.stop()
        elif previous is not None:
            return previous
        atp = lt.add_torrent_params()
        atp.ti = lt.torrent_info(lt.bdecode(self.raw))
        atp.save_path = str(self.data_dir)
        atp.flags = (atp.flags | lt.torrent_flags.seed_mode) & ~lt.torrent_flags.auto_managed & ~lt.torrent_flags.paused
        self.handle = self.service.add_torrent(atp, self)
        if self.service.settings.upload_rate_limit:
            self.handle.set_upload_limit(self.service.settings.upload_rate_limit)
        self.service.seeds[self.community_id] = self
        self._set_state(STARTING)
        return self

    def connect_peer(self, host: str, port: int) -> None:
        """Reach out to a peer (a member behind NAT that cannot reach us, or a test's client)."""
        self.service.call(lambda: self.handle.connect_peer((host, int(port)))).result(10)

    def stop(self) -> None:
        """Alert thread."""
        self.service.remove_torrent(self.handle, self)
        if self.service.seeds.get(self.community_id) is self:
            del self.service.seeds[self.community_id]
        self._set_state(STOPPED)

    def on_event(self, e: ev.TorrentEvent) -> None:
        if e.kind == ev.ERROR:
            self.message = e.data["message"]
            self._set_state(ERROR)
            self.ready.set()
        elif e.kind == ev.CHECKED:
            # libtorrent posts torrent_checked_alert after it has turned the torrent to "seeding": until then it
            # disconnects every incoming peer with torrent_not_ready, and a member retries only on a later tick
            if self.state == STARTING:
                self._set_state(IDLE)
            self.ready.set()
        elif e.kind == ev.STATUS:
            d = e.data
            self.peers, self.uploaded, self.upload_rate = d["num_peers"], d["total_payload_upload"], d["upload_rate"]
            self.has_incoming = self.has_incoming or d["has_incoming"]
            if d["error"]:
                self.message = d["error"]
                self._set_state(ERROR)
                self.ready.set()
            elif not self.ready.is_set():   # still starting (see CHECKED): only an error is news
                return
            elif self.peers > 0:
                self._set_state(SEEDING_WITH_PEERS)
            elif self.service.listen_ok is False or (self.service.portmap_ok is False and not self.has_incoming):
                self._set_state(NOT_REACHABLE)
            else:
                self._set_state(IDLE)

    def on_tick(self, now: float) -> None:
        return None      # no timer

    def _set_state(self, state: str) -> None:
        changed = state != self.state
        self.state = state
        if changed or state == SEEDING_WITH_PEERS:
            self.service.emit(ev.TorrentEvent(ev.SEED, self.infohash, self.snapshot()))

    def snapshot(self) -> dict:
        return {"community_id": self.community_id, "infohash": self.infohash, "state": self.state,
                "peers": self.peers, "uploaded": self.uploaded, "upload_rate": self.upload_rate,
                "message": self.message, "magnet": self.magnet}
