"""Member side: one download of one community's archive torrent, as a state machine on the alert thread.

metadata (upload mode, timeout + retry) -> validate metainfo (nothing written yet) -> file priorities, wait for
file_prio_alert -> piece priorities for the index only, leave upload mode -> read and check the index -> choose
archives -> disk-space check -> piece priorities for exactly their pieces -> complete when every wanted piece
has finished (counted from piece_finished alerts, not torrent_finished, which fires at once when nothing is wanted).
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

import fastbencode
import libtorrent as lt

from core.archive.constants import DATA_FILE, INDEX_FILE
from core.archive.diskio import check_free_space
from core.archive.errors import ArchiveError, InvalidTorrent
from core.archive.torrent import Metainfo, metainfo_from_info
from core.archive.verify import Report, verify_index_bytes
from core.torrent import events as ev
from core.torrent import magnet
from core.torrent.selection import Selection, archive_pieces, index_pieces, piece_bytes

log = logging.getLogger(__name__)
METADATA, PRIO_INDEX, INDEX, READ_INDEX, DOWNLOADING = "metadata", "prio-index", "index", "read-index", "downloading"
FLUSHING, COMPLETE, ERROR, CANCELLED, PAUSED = "flushing", "complete", "error", "cancelled", "paused"
FINAL = (COMPLETE, ERROR, CANCELLED)
RESUME_FLAGS = lt.save_resume_flags_t.save_info_dict | lt.save_resume_flags_t.flush_disk_cache


def parse_magnet(uri: str, community_id: str | None = None):
    """(add_torrent_params, infohash, expected community ID) from a magnet link; MagnetError (a ValueError) with
    the reason if unusable. The link is read by core.torrent.magnet (the one parser), not by libtorrent."""
    link = magnet.parse_magnet(uri, community_id, need_community=True)
    atp = lt.add_torrent_params()
    atp.info_hashes = lt.info_hash_t(lt.sha1_hash(bytes.fromhex(link.infohash)))
    atp.name = link.community_id
    atp.trackers = list(link.trackers)
    atp.peers = _endpoints(atp, link.peers)
    return atp, link.infohash, link.community_id


def _endpoints(atp, peers) -> list:
    """The x.pe peers libtorrent can take as endpoints: IP addresses only (a host name raises TypeError)."""
    ok = []
    for p in peers:
        try:
            atp.peers = [p]
        except (TypeError, ValueError, RuntimeError):
            continue
        ok.append(p)
    return ok


class FetchJob:
    def __init__(self, service, magnet: str, data_dir: Path, selection: Selection, *,
                 community_id: str | None = None, peers: tuple = ()):
        self.service = service
        self.magnet = magnet
        self.data_dir = data_dir
        self.selection = selection
        self.community_id = community_id or ""
        self.peers = peers
        self.infohash = ""
        self.handle = None
        self.state = "new"
        self.code = ""
        self.message = ""
        self.metainfo: Metainfo | None = None
        self.attempts = 0
        self.attempt_started = 0.0
        self.last_resume = 0.0
        self.checking = False
        self.resumed = False
        self.rechecked = False
        self.index_range = range(0)
        self.entries: dict = {}
        self.chosen: list[str] = []
        self.wanted: set[int] = set()
        self.missing: set[int] = set()       # wanted pieces not yet had: completion = empty (no O(n) per piece)
        self.have: set[int] = set()
        self.index_parts: dict[int, bytes] = {}
        self.received: set[int] = set()      # pieces finished in this session (piece_finished alerts)
        self.downloaded = 0                  # payload bytes received from peers
        self.redundant = 0                   # of which duplicates (end-game) or failed hashes
        self.peers_connected = 0
        self.done = threading.Event()

    # -- control (any thread) ----------------------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    def cancel(self) -> None:
        self.service.call(self._cancel, "cancelled by the user").result(30)

    def pause(self) -> None:
        self.service.call(self._pause).result(30)

    # -- alert thread ------------------------------------------------------------------------------------------
    def start(self) -> "FetchJob":
        try:
            atp, self.infohash, self.community_id = parse_magnet(self.magnet, self.community_id)
        except ValueError as e:
            return self._fail("bad-magnet", str(e), remove=False)
        previous = self.service.jobs.get(self.community_id)
        if previous is not None and previous is not self:
            previous._cancel(f"superseded by {self.infohash}")
        store = self.service.resume
        data = store.load_resume(self.infohash) if store else None
        if data is not None:
            atp = lt.read_resume_data(data)
            self.resumed = True
        atp.save_path = str(self.data_dir)
        # peers handed to add_torrent are connected to at once (libtorrent's connect boost); connect_peer() after
        # the add would wait for the session's next once-a-second connect round (up to 1 s, 0.5 s in a new session)
        known = [tuple(p) for p in atp.peers]
        given = [(h, int(port)) for h, port in self.peers]
        atp.peers = _endpoints(atp, known + [p for p in given if p not in known])
        later = [p for p in given if p not in [tuple(q) for q in atp.peers]]   # host names: connect_peer below
        atp.flags = ((atp.flags | lt.torrent_flags.upload_mode)
                     & ~lt.torrent_flags.auto_managed & ~lt.torrent_flags.paused)
        self.handle = self.service.add_torrent(atp, self)
        self.service.jobs[self.community_id] = self
        if self.service.settings.download_rate_limit:
            self.handle.set_download_limit(self.service.settings.download_rate_limit)
        self._save_job()
        self._set_state(METADATA)
        self.attempts, self.attempt_started = 1, self.service.clock()
        for host, port in later:
            self.handle.connect_peer((host, port))
        if self.handle.torrent_file() is not None:
            self._on_metadata()
        return self

    def _connect_peers(self) -> None:
        for host, port in self.peers:
            self.handle.connect_peer((host, int(port)))

    def _on_metadata(self) -> None:
        if self.state != METADATA:
            return
        try:
            info_bytes = bytes(self.handle.torrent_file().info_section())
            info = fastbencode.bdecode(info_bytes)
            if not isinstance(info, dict):
                raise InvalidTorrent("info is not a dictionary", code="torrent-undecodable")
            mi = metainfo_from_info(info, info_bytes, expected_name=self.community_id,
                                    max_total=self.service.settings.max_torrent_bytes)
        except InvalidTorrent as e:
            return self._fail(e.code or "torrent-invalid", f"metainfo refused: {e}")
        except Exception as e:  # fastbencode raises assorted errors on junk
            return self._fail("torrent-undecodable", f"metainfo refused: {e}")
        if mi.infohash != self.infohash:
            return self._fail("torrent-invalid", "metadata does not match the magnet's infohash")
        self.metainfo = mi
        self.index_range = index_pieces(mi.file_length(DATA_FILE), mi.file_length(INDEX_FILE))
        need = piece_bytes(self.index_range, mi.total_length)
        if not self._space_for(need):
            return
        self._refresh_have()
        if self.resumed and self.service.unclean_previous:
            self.handle.force_recheck()     # the previous run crashed: trust the files, not the resume data
            self.checking = self.rechecked = True
        if self.service.resume is not None:
            self.handle.save_resume_data(RESUME_FLAGS)
        self._set_state(PRIO_INDEX)
        self.handle.prioritize_files([4, 4])   # asynchronous; piece priorities only after file_prio_alert

    def _refresh_have(self) -> None:
        st = self.handle.status(lt.status_flags_t.query_pieces)
        self.have = {i for i, b in enumerate(st.pieces) if b}
        self.missing = self.wanted - self.have
        self.checking = "checking" in str(st.state)

    def _on_file_prio(self) -> None:
        if self.state != PRIO_INDEX:
            return
        n = self.metainfo.num_pieces
        self.handle.prioritize_pieces([4 if i in self.index_range else 0 for i in range(n)])
        self.handle.unset_flags(lt.torrent_flags.upload_mode)
        self._set_state(INDEX)
        self._evaluate()

    def _evaluate(self) -> None:
        if self.checking:
            return
        if self.state == INDEX and set(self.index_range) <= self.have:
            # read through libtorrent: a piece is reported finished before its bytes necessarily reach the file
            self._set_state(READ_INDEX)
            self.index_parts.clear()
            for p in self.index_range:
                self.handle.read_piece(p)
        if self.state == DOWNLOADING and not self.missing:
            # finished pieces may still sit in libtorrent's store buffer: complete once they are in the files
            self._set_state(FLUSHING)
            self.handle.flush_cache()

    def _on_flushed(self) -> None:
        if self.state == FLUSHING:
            st = self.handle.status()
            self.downloaded, self.redundant = st.total_payload_download, st.total_redundant_bytes
            self._set_state(COMPLETE)
            if self.service.resume is not None:
                self.handle.save_resume_data(RESUME_FLAGS)
            self._save_job()
            self.done.set()

    def _on_read_piece(self, d: dict) -> None:
        if self.state != READ_INDEX or d["piece"] not in self.index_range:
            return
        if not d["ok"]:
            return self._fail("index-unreadable", f"cannot read the downloaded index: {d['message']}")
        self.index_parts[d["piece"]] = d["data"]
        if len(self.index_parts) == len(self.index_range):
            raw = b"".join(self.index_parts[p] for p in self.index_range)
            self.index_parts.clear()
            self._select(raw[:self.metainfo.file_length(INDEX_FILE)])

    def _select(self, raw: bytes) -> None:
        mi = self.metainfo
        unwrap = getattr(self.service, "index_unwrap", None)   # encrypted communities: the index is wrapped
        if unwrap is not None:
            try:
                raw = unwrap(raw)
            except Exception as e:  # KeyMissing, TamperedContent...: a state for the user, never a retry loop
                return self._fail(getattr(e, "code", "index-invalid"), f"cannot open the index: {e}")
        report = Report(self.community_id + "/" + INDEX_FILE)
        self.entries = verify_index_bytes(raw, report, mi.file_length(DATA_FILE))
        if not report.ok:
            bad = "; ".join(f.message for f in report.findings if f.severity == "error")
            return self._fail("index-invalid", f"index refused: {bad}")
        self.chosen = self.selection.choose(self.entries)
        self.wanted = set(self.index_range) | archive_pieces(self.entries, self.chosen)
        self.missing = self.wanted - self.have
        if not self._space_for(piece_bytes(self.wanted - self.have, mi.total_length)):
            return
        self.handle.prioritize_pieces([4 if i in self.wanted else 0 for i in range(mi.num_pieces)])
        self._set_state(DOWNLOADING)
        self._evaluate()   # everything wanted may already be on disk (a restart after the download finished)

    def _space_for(self, need: int) -> bool:
        try:
            check_free_space(self.data_dir, need, "the download needs", self.service.free_space,
                             self.service.settings.disk_margin)
        except ArchiveError as e:
            self._fail(e.code, str(e))
            return False
        return True

    def on_event(self, e: ev.TorrentEvent) -> None:
        if self.state in FINAL:
            return
        if e.kind == ev.METADATA:
            self._on_metadata()
        elif e.kind == ev.FILE_PRIO:
            self._on_file_prio()
        elif e.kind == ev.PIECE_FINISHED:
            self.have.add(e.data["piece"])
            self.missing.discard(e.data["piece"])
            self.received.add(e.data["piece"])
            self._evaluate()
        elif e.kind == ev.FLUSHED:
            self._on_flushed()
        elif e.kind == ev.READ_PIECE:
            self._on_read_piece(e.data)
        elif e.kind == ev.CHECKED:
            if self.metainfo is not None:
                self._refresh_have()        # still checking if a forced recheck follows the resume check
                self._evaluate()
        elif e.kind == ev.ERROR:
            self._fail(e.data["code"], e.data["message"], remove=False)
            if self.service.resume is not None and self.infohash:
                self.service.resume.delete_resume(self.infohash)    # see resume_trusted
            if self.handle is not None and self.handle.is_valid():
                self.handle.pause()
        elif e.kind == ev.STATUS:
            d = e.data
            self.downloaded, self.peers_connected = d["total_payload_download"], d["num_peers"]
            self.redundant = d["total_redundant_bytes"]
            if self.checking and "checking" not in d["state"] and self.metainfo is not None:
                self._refresh_have()
                self._evaluate()
            self._emit()

    def on_tick(self, now: float) -> float | None:
        """The metadata timeout and the resume timer; returns when the next one is due (the service wakes then)."""
        settings = self.service.settings
        if self.state == METADATA:
            if now - self.attempt_started < settings.metadata_timeout:
                return self.attempt_started + settings.metadata_timeout
            if self.attempts > settings.metadata_retries:
                self._fail("metadata-timeout", f"no metadata after {self.attempts} attempts of "
                           f"{settings.metadata_timeout:g} s")
                return None
            self.attempts += 1
            self.attempt_started = now
            self._connect_peers()
            self.handle.force_reannounce()
            if settings.dht:
                self.handle.force_dht_announce()
            self._emit()
            return now + settings.metadata_timeout
        if self.state in (INDEX, READ_INDEX, DOWNLOADING, FLUSHING) and self.service.resume is not None:
            if now - self.last_resume >= settings.resume_interval:
                self.last_resume = now
                if self.handle.need_save_resume_data():
                    self.handle.save_resume_data(RESUME_FLAGS)
            return self.last_resume + settings.resume_interval
        return None

    def _pause(self) -> None:
        if self.state in FINAL or self.handle is None:
            return
        self.handle.pause()
        if self.service.resume is not None and self.metainfo is not None:
            self.handle.save_resume_data(RESUME_FLAGS)
        self._set_state(PAUSED)

    def _cancel(self, why: str) -> None:
        if self.state in FINAL:
            return
        self.message = why
        self.service.remove_torrent(self.handle, self)
        if self.service.jobs.get(self.community_id) is self:
            del self.service.jobs[self.community_id]
        if self.service.resume is not None and self.infohash:
            self.service.resume.delete_resume(self.infohash)
        self._set_state(CANCELLED)
        self.done.set()

    def _fail(self, code: str, message: str, remove: bool = True) -> "FetchJob":
        # the job's state carries the failure to whoever shows it (CLI line, GUI, node event): logged, not printed
        log.info("download %s failed: %s: %s", self.infohash or self.magnet[:60], code, message)
        self.code, self.message = code, message
        if remove:
            self.service.remove_torrent(self.handle, self)
        self._set_state(ERROR)
        self._save_job()
        self.done.set()
        return self

    def _save_job(self) -> None:
        if self.service.resume is not None and self.community_id and self.infohash:
            self.service.resume.save_job(self.community_id, {
                "magnet": self.magnet, "community_id": self.community_id, "infohash": self.infohash,
                "data_dir": str(self.data_dir), "selection": self.selection.to_json(),
                "peers": [list(p) for p in self.peers], "state": self.state})

    def _set_state(self, state: str) -> None:
        if state != self.state:
            log.debug("%s fetch: %s -> %s (%d pieces missing, %d peers)", self.infohash[:12], self.state, state,
                      len(self.missing), self.peers_connected)
            self.state = state
            self._emit()

    def _emit(self) -> None:
        self.service.emit(ev.TorrentEvent(ev.JOB, self.infohash, self.snapshot()))

    @property
    def resume_trusted(self) -> bool:
        """False once the download failed (libtorrent's error: a file it could not write, ...). A piece can pass its
        hash before its write fails, so what the session believes it has may not be on disk: its resume data is
        deleted and not saved again, and the next run checks the files instead of trusting the claim (a run after
        a full disk took an empty `data` for complete)."""
        return self.state != ERROR

    @property
    def wanted_bytes(self) -> int:
        return piece_bytes(self.wanted, self.metainfo.total_length) if self.metainfo else 0

    @property
    def done_bytes(self) -> int:
        return piece_bytes(self.wanted & self.have, self.metainfo.total_length) if self.metainfo else 0

    def snapshot(self) -> dict:
        wanted = self.wanted_bytes
        return {"community_id": self.community_id, "infohash": self.infohash, "state": self.state,
                "code": self.code, "message": self.message, "selection": self.selection.to_json(),
                "archives": len(self.chosen), "archives_total": len(self.entries),
                "wanted_pieces": len(self.wanted), "have_wanted_pieces": len(self.wanted & self.have),
                "wanted_bytes": wanted, "done_bytes": self.done_bytes,
                "progress": (self.done_bytes / wanted) if wanted else 0.0,
                "downloaded": self.downloaded, "redundant": self.redundant, "peers": self.peers_connected,
                "attempts": self.attempts,
                "resumed": self.resumed, "rechecked": self.rechecked}
