"""Plain-value events of the BitTorrent service. libtorrent alerts are only valid until the next pop_alerts(), so
the alert thread copies what matters into these before handing them on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# kinds
METADATA = "metadata"            # metadata received from a peer
FILE_PRIO = "file-prio"          # prioritize_files took effect
PIECE_FINISHED = "piece-finished"
READ_PIECE = "read-piece"        # a piece read back through libtorrent (its store buffer included)
FLUSHED = "flushed"              # written pieces have reached the files
CHECKED = "checked"              # files checked (after add, resume or recheck)
FINISHED = "finished"            # libtorrent's torrent_finished (fires at once when nothing is wanted)
STATUS = "status"                # periodic status, data = TorrentStatus fields
RESUME_SAVED = "resume-saved"
REMOVED = "removed"
ERROR = "error"                  # torrent or file error
PEER = "peer"                    # peer connected / disconnected
LISTEN = "listen"                # listen succeeded / failed
PORTMAP = "portmap"              # UPnP / NAT-PMP result
JOB = "job"                      # a download job changed state (data = FetchJob.snapshot())
SEED = "seed"                    # a seeded torrent changed state (data = SeedInfo.snapshot())


@dataclass(frozen=True, slots=True)
class TorrentEvent:
    kind: str
    infohash: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def status_values(st) -> dict[str, Any]:
    """The fields of a libtorrent torrent_status that the app uses, as plain values."""
    return {
        "state": str(st.state).rsplit(".", 1)[-1],
        "progress": st.progress,
        "total_wanted": st.total_wanted,
        "total_wanted_done": st.total_wanted_done,
        "total_payload_download": st.total_payload_download,
        "total_payload_upload": st.total_payload_upload,
        "total_redundant_bytes": st.total_redundant_bytes,
        "all_time_upload": st.all_time_upload,
        "all_time_download": st.all_time_download,
        "download_rate": st.download_payload_rate,
        "upload_rate": st.upload_payload_rate,
        "num_peers": st.num_peers,
        "has_incoming": st.has_incoming,
        "upload_mode": st.upload_mode,
        "paused": bool(st.flags & _paused_flag()),
        "error": st.errc.message() if st.errc.value() else "",
        "num_pieces": st.num_pieces,
    }


def _paused_flag():
    import libtorrent as lt
    return lt.torrent_flags.paused
