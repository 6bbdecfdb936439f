"""One libtorrent session, one alert thread (UX-AND-ANCHORS.md: torrent clients).

The alert thread sleeps in `poll` on one pipe until something happens: libtorrent writes a byte to it when an
alert arrives (`set_alert_fd`), `call()` writes one when it queues a command, `close()` one to stop. It then runs
the queued commands, copies each alert into a plain TorrentEvent, dispatches it to the torrent's owner (a
SeededTorrent or a FetchJob) and to subscribers. The only timers are what they are for: `post_torrent_updates`
every `status_interval` s (progress for the views) and the owners' own deadlines (metadata timeout, resume
timer), each woken exactly when due. No fixed polling tick stands between an event and its handling. Every
libtorrent call on a torrent happens on that thread, so owners need no locks.
"""
from __future__ import annotations

import logging
import os
import queue
import select
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Callable, Protocol

import libtorrent as lt

from core.archive.diskio import disk_error_code
from core.torrent import events as ev
from core.torrent.nodelay import set_nodelay
from core.torrent.resume import ResumeStore, ShutdownMarker
from core.torrent.settings import TorrentSettings

log = logging.getLogger(__name__)


class Owner(Protocol):
    infohash: str

    def on_event(self, e: ev.TorrentEvent) -> None: ...
    def on_tick(self, now: float) -> float | None: ...   # returns when it next wants a tick (None: no timer)


def infohash_of(a) -> str:
    ih = getattr(a, "info_hashes", None)
    if ih is not None and not callable(ih):
        return str(ih.v1)
    try:
        return str(a.handle.info_hash())
    except Exception:
        return ""


def _convert(a) -> list[ev.TorrentEvent]:
    """Alert -> plain events. Must not keep a reference to `a`."""
    t = type(a).__name__
    if t == "state_update_alert":
        return [ev.TorrentEvent(ev.STATUS, str(st.info_hashes.v1), ev.status_values(st)) for st in a.status]
    ih = infohash_of(a) if isinstance(a, lt.torrent_alert) or t == "torrent_removed_alert" else ""
    if t == "piece_finished_alert":
        return [ev.TorrentEvent(ev.PIECE_FINISHED, ih, {"piece": int(a.piece_index)})]
    if t == "read_piece_alert":
        ok = not a.error.value()
        return [ev.TorrentEvent(ev.READ_PIECE, ih, {"piece": int(a.piece), "ok": ok,
                                                    "data": bytes(a.buffer)[:a.size] if ok else b"",
                                                    "message": "" if ok else a.error.message()})]
    if t == "metadata_received_alert":
        return [ev.TorrentEvent(ev.METADATA, ih)]
    if t == "cache_flushed_alert":
        return [ev.TorrentEvent(ev.FLUSHED, ih)]
    if t == "file_prio_alert":
        return [ev.TorrentEvent(ev.FILE_PRIO, ih)]
    if t == "torrent_checked_alert":
        return [ev.TorrentEvent(ev.CHECKED, ih)]
    if t == "torrent_finished_alert":
        return [ev.TorrentEvent(ev.FINISHED, ih)]
    if t == "torrent_removed_alert":
        return [ev.TorrentEvent(ev.REMOVED, ih)]
    if t == "save_resume_data_alert":
        return [ev.TorrentEvent(ev.RESUME_SAVED, ih, {"data": bytes(lt.write_resume_data_buf(a.params))})]
    if t in ("torrent_error_alert", "file_error_alert", "metadata_failed_alert"):
        # an OS error's number only: libtorrent's own 28 is not ENOSPC
        code = (a.error.category().name() in ("system", "generic") and disk_error_code(a.error.value())
                or t.replace("_alert", "").replace("_", "-"))
        return [ev.TorrentEvent(ev.ERROR, ih, {"code": code, "message": f"{a.error.message()} ({a.message()})"})]
    if t in ("peer_connect_alert", "peer_disconnected_alert"):
        ep = a.endpoint
        return [ev.TorrentEvent(ev.PEER, ih, {"connected": t == "peer_connect_alert", "peer": str(ep),
                                              "message": a.message(),
                                              "endpoint": (str(ep[0]), int(ep[1])) if isinstance(ep, tuple) else None})]
    if t in ("listen_succeeded_alert", "listen_failed_alert"):
        return [ev.TorrentEvent(ev.LISTEN, "", {"ok": t == "listen_succeeded_alert", "message": a.message(),
                                                "socket": str(a.socket_type).rsplit(".", 1)[-1]})]
    if t in ("portmap_alert", "portmap_error_alert"):
        return [ev.TorrentEvent(ev.PORTMAP, "", {"ok": t == "portmap_alert", "message": a.message()})]
    return []


class TorrentService:
    def __init__(self, settings: TorrentSettings | None = None, state_dir: Path | str | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 free_space: Callable[[Path], int] | None = None):
        self.settings = settings or TorrentSettings()
        self.state_dir = Path(state_dir) if state_dir else None
        self.resume = ResumeStore(self.state_dir) if self.state_dir else None
        self._marker = ShutdownMarker(self.state_dir / "running.marker") if self.state_dir else None
        self.clock = clock
        self.free_space = free_space
        self.unclean_previous = False
        self.listen_ok: bool | None = None
        self.portmap_ok: bool | None = None
        self._ses = None
        self._wake_r = self._wake_w = -1      # the alert thread's pipe: alerts, commands and close write to it
        self._remotes: set[tuple[str, int]] = set()   # peers we connected out to (TCP_NODELAY, nodelay.py)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closing = threading.Lock()       # close() from two threads (Quit, then a caller): one does the work
        self._queueing = threading.Lock()      # a command is queued before the stop flag is set, or refused
        self._cmds: "queue.SimpleQueue[tuple[Callable, Future]]" = queue.SimpleQueue()
        self._subs: list[Callable[[ev.TorrentEvent], None]] = []
        self.owners: dict[str, Owner] = {}
        self.seeds: dict[str, object] = {}     # community ID -> SeededTorrent
        self.jobs: dict[str, object] = {}      # community ID -> FetchJob
        self.index_unwrap = None               # bytes -> bytes for encrypted indexes (set by the engine)

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> "TorrentService":
        if self._marker:
            self.unclean_previous = self._marker.acquire()
        self._ses = lt.session(self.settings.settings_pack())
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)      # libtorrent's write must never block its network thread
        self._ses.set_alert_fd(self._wake_w)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="torrent-alerts", daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> "TorrentService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def listen_port(self) -> int:
        return self._ses.listen_port()

    def close(self, timeout: float = 10.0) -> None:
        """Save resume data of unfinished downloads, stop the thread, drop the session, remove the marker.

        Safe from any thread and more than once: a second caller waits for the first one's close and returns.
        An alert thread that does not answer within `timeout` (an owner stuck in a callback) does not keep the
        session alive: the save is given up with a warning and the session is closed anyway."""
        with self._closing:
            if self._thread is None:
                return
            try:
                self.call(self._save_all_resume).result(timeout)
            except Exception as e:  # a failing save must not keep the session alive
                log.warning("saving resume data at shutdown failed: %s", str(e) or type(e).__name__)
            with self._queueing:
                self._stop.set()
            self._wake()
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("the torrent alert thread did not stop within %.0f s; closing the session anyway",
                            timeout)
            self._thread = None
            self._ses.set_alert_fd(-1)  # under libtorrent's alert lock: no write to the pipe after this returns
            # peers closed first: the session's shutdown then ends at once instead of on its next 100 ms abort tick
            self._ses.pause()
            self._ses = None
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
            self._wake_r = self._wake_w = -1
            if self._marker:
                self._marker.release()

    # -- threading ---------------------------------------------------------------------------------------------
    def call(self, fn: Callable, *args) -> Future:
        """Run `fn(*args)` on the alert thread."""
        fut: Future = Future()
        with self._queueing:
            if self._stop.is_set():      # the thread drains its queue one last time after the flag: never hang
                fut.set_exception(RuntimeError("torrent service stopped"))
                return fut
            self._cmds.put((lambda: fn(*args), fut))
        self._wake()
        return fut

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except OSError:   # pipe full: a wake-up is pending anyway; closed: the thread is gone
            pass

    def subscribe(self, callback: Callable[[ev.TorrentEvent], None]) -> Callable[[], None]:
        """`callback` runs on the alert thread with every event: keep it short."""
        self._subs.append(callback)
        return lambda: self._subs.remove(callback) if callback in self._subs else None

    def emit(self, e: ev.TorrentEvent) -> None:
        for cb in list(self._subs):
            try:
                cb(e)
            except Exception:
                log.exception("event subscriber failed")

    def _run(self) -> None:
        ses = self._ses
        next_status = 0.0
        wake_at = 0.0
        poller = select.poll()                  # not select(): no limit on the descriptor's number
        poller.register(self._wake_r, select.POLLIN)
        while not self._stop.is_set():
            poller.poll(max(0, int((wake_at - self.clock()) * 1000) + 1))   # +1: never wake just before the due time
            try:
                while os.read(self._wake_r, 4096):   # drained before pop_alerts: no wake-up is lost
                    pass
            except BlockingIOError:
                pass
            while not self._stop.is_set():
                try:
                    fn, fut = self._cmds.get_nowait()
                except queue.Empty:
                    break
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(fn())
                    except BaseException as e:  # handed to the caller
                        fut.set_exception(e)
            if self._stop.is_set():   # e.g. a command that outlasted close(): the session and the pipe are gone
                break
            for e in [e for a in ses.pop_alerts() for e in _convert(a)]:
                self._dispatch(e)
            now = self.clock()
            if now >= next_status:
                next_status = now + self.settings.status_interval
                ses.post_torrent_updates()
            wake_at = next_status
            for owner in list(self.owners.values()):
                try:
                    due = owner.on_tick(now)
                except Exception:
                    log.exception("torrent owner tick failed")
                    continue
                if due is not None:
                    wake_at = min(wake_at, due)
        # fail commands still queued so callers do not hang
        while not self._cmds.empty():
            _, fut = self._cmds.get_nowait()
            fut.set_exception(RuntimeError("torrent service stopped"))

    def _dispatch(self, e: ev.TorrentEvent) -> None:
        if e.kind == ev.LISTEN and e.data["socket"] == "tcp":   # peers reach us over TCP (uTP may be off)
            self.listen_ok = e.data["ok"] if self.listen_ok is not True else True
            self._nodelay()
        elif e.kind == ev.PEER and e.data.get("endpoint"):
            log.debug("%s: %s", e.infohash[:12], e.data.get("message"))   # why a seeder went (support staff)
            if e.data["connected"]:
                self._remotes.add(e.data["endpoint"])
                self._nodelay()
            else:
                self._remotes.discard(e.data["endpoint"])
        elif e.kind == ev.METADATA:   # the handshake is done: an outgoing connect still under way above is now up
            self._nodelay()
        elif e.kind == ev.PORTMAP:
            self.portmap_ok = bool(self.portmap_ok) or e.data["ok"]
        elif e.kind == ev.RESUME_SAVED and self.resume is not None:
            if getattr(self.owners.get(e.infohash), "resume_trusted", True):   # FetchJob.resume_trusted
                self.resume.save_resume(e.infohash, e.data["data"])
        owner = self.owners.get(e.infohash)
        if owner is not None:
            try:
                owner.on_event(e)
            except Exception:
                log.exception("torrent owner failed on %s", e.kind)
        if e.kind != ev.RESUME_SAVED:
            self.emit(e)
        else:
            self.emit(ev.TorrentEvent(ev.RESUME_SAVED, e.infohash, {"bytes": len(e.data["data"])}))

    def _nodelay(self) -> None:
        ses = self._ses
        if self.settings.tcp_nodelay and ses is not None:
            set_nodelay({ses.listen_port()}, self._remotes)

    def _save_all_resume(self) -> None:
        """Runs on the alert thread: ask every unfinished download for resume data and wait for all of them."""
        pending = set()
        for job in list(self.jobs.values()):
            h = getattr(job, "handle", None)
            # not a failed download's (FetchJob.resume_trusted), nor again what completion or a pause just saved
            if (h is not None and h.is_valid() and h.torrent_file() is not None and self.resume is not None
                    and getattr(job, "resume_trusted", True) and h.need_save_resume_data()):
                h.save_resume_data(lt.save_resume_flags_t.save_info_dict | lt.save_resume_flags_t.flush_disk_cache)
                pending.add(job.infohash)
        deadline = time.monotonic() + 5
        while pending and time.monotonic() < deadline:
            self._ses.wait_for_alert(100)
            for e in [e for a in self._ses.pop_alerts() for e in _convert(a)]:
                if e.kind == ev.RESUME_SAVED:
                    pending.discard(e.infohash)
                self._dispatch(e)

    # -- torrents ----------------------------------------------------------------------------------------------
    def add_torrent(self, atp, owner: Owner):
        """Alert thread only."""
        atp.save_path = str(Path(atp.save_path).resolve())
        known = set(atp.trackers)
        atp.trackers = list(atp.trackers) + [t for t in self.settings.trackers if t not in known]
        h = self._ses.add_torrent(atp)
        owner.infohash = str(h.info_hash())
        self.owners[owner.infohash] = owner
        return h

    def remove_torrent(self, h, owner: Owner) -> None:
        """Alert thread only. Keeps the files."""
        if self.owners.get(owner.infohash) is owner:
            del self.owners[owner.infohash]
        if h is not None and h.is_valid():
            self._ses.remove_torrent(h)

    def seed(self, community_id: str, data_dir: Path | str, torrent: bytes | Path | str):
        """Seed `<data_dir>/<community_id>/{data,index}`; drops the community's previous torrent. Returns once
        libtorrent accepts peers for it, so a member that connects at once is not turned away."""
        from core.torrent.seed import SeededTorrent
        raw = torrent if isinstance(torrent, bytes) else Path(torrent).read_bytes()
        st = SeededTorrent(self, community_id, Path(data_dir), raw)
        st = self.call(st.start).result(30)
        if not st.ready.wait(30):     # a peer that comes before it is done is turned away: see SeededTorrent.ready
            log.warning("%s: libtorrent has not finished adding the seed after 30 s; it stays 'starting'",
                        community_id)
        return st

    def set_upload_rate_limit(self, bytes_per_s: int) -> None:
        """Change the per-torrent upload limit (bytes/s, 0: none) of every seed now, and of seeds added later."""
        if bytes_per_s < 0:
            raise ValueError(f"an upload limit is 0 (none) or more bytes/s, not {bytes_per_s}")

        def apply() -> None:
            self.settings.upload_rate_limit = bytes_per_s
            for st in list(self.seeds.values()):
                if st.handle is not None and st.handle.is_valid():
                    st.handle.set_upload_limit(bytes_per_s if bytes_per_s else -1)
        self.call(apply).result(10)

    def resume_jobs(self) -> list:
        """Restart every saved download that had not finished (app start). Returns the jobs."""
        from core.torrent.selection import Selection
        out = []
        for j in (self.resume.jobs() if self.resume else []):
            if j.get("state") not in ("complete", "error", "cancelled"):
                out.append(self.fetch(j["magnet"], j["data_dir"], Selection.from_json(j.get("selection", {})),
                                      community_id=j["community_id"], peers=[tuple(p) for p in j.get("peers", [])]))
        return out

    def fetch(self, magnet: str, data_dir: Path | str, selection=None, *, community_id: str | None = None,
              peers=()):
        """Start (or resume) downloading; a newer magnet for the same community cancels the running one."""
        from core.torrent.fetch import FetchJob
        from core.torrent.selection import Selection
        job = FetchJob(self, magnet, Path(data_dir), selection or Selection(), community_id=community_id,
                       peers=tuple(peers))
        self.call(job.start).result(30)
        return job
