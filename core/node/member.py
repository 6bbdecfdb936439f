"""The member's archive duties: accept links, settle, download the chosen archives, import, resume.

Transports are injected: `fetcher` is a core.torrent TorrentService (fetch(magnet, data_dir, selection, ...)),
`hydrator(community_id, folder, {archive_id: IndexEntry}) -> messages imported` writes the history database.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Mapping

from core.archive.codec import IndexEntry
from core.archive.constants import INDEX_FILE
from core.archive.errors import ArchiveError
from core.archive.inspect import read_index
from core.node import events as E
from core.node.community import SETTLE_SECONDS, CommunityConfig, NodePaths
from core.node.links import LinkDecision, LinkGate
from core.node.offload import JobCancelled
from core.status.errors import KeyMissing
from core.storage.archive_state import ArchiveStateDB
from core.storage.history import HistoryWriteError

log = logging.getLogger(__name__)
NO_LINK_YET = "no archive link received yet"
RETRY_SECONDS = (30, 120, 600, 1800)      # back-off after a failed download: never a tight loop

Hydrator = Callable[[str, Path, Mapping[str, IndexEntry]], int]
"""hydrator(community_id, folder, {id: entry of one window}) -> rows written. A hydrator that writes a history
database also has `imported(community_id) -> set of archive IDs`: what that database committed with the rows
(core.node.hydrate.reference_hydrator). That record is the truth; state.sqlite's flag follows it."""


def selection_for(cfg: CommunityConfig):
    from core.torrent.selection import Selection
    if cfg.policy == "range":
        return Selection("range", cfg.range_start, cfg.range_end)
    return Selection(cfg.policy)


class MemberNode:
    def __init__(self, cfg: CommunityConfig, paths: NodePaths, state: ArchiveStateDB, bus: E.EventBus, clock, *,
                 fetcher=None, hydrator: Hydrator | None = None, settle: float = SETTLE_SECONDS,
                 peers: tuple = ()):
        self.cfg, self.paths, self.state, self.bus, self.clock = cfg, paths.ensure(), state, bus, clock
        self.fetcher, self.hydrator, self.settle, self.peers = fetcher, hydrator, settle, tuple(peers)
        self.gate = LinkGate(state, cfg.community_id, now_ms=lambda: int(self.clock.now() * 1000))
        self.deadline: float | None = None
        self.job = None
        self.failures = 0
        self.parked: dict[str, str] = {}          # archive ID -> reason (e.g. decryption key missing)
        self.link_parked: str | None = None       # the whole link waits (its index needs a missing key)
        self.index_unwrap = None                  # bytes -> bytes (encrypted communities' index)
        self.waiting_reason: str | None = NO_LINK_YET

    @property
    def cid(self) -> str:
        return self.cfg.community_id

    def set_waiting(self, reason: str, **kw) -> None:
        """What the member waits for, in words (the window shows it); published as an event."""
        self.waiting_reason = reason
        self.bus.publish(E.WAITING, self.cid, reason=reason, **kw)

    # -- links ---------------------------------------------------------------------------------------------
    def on_envelope(self, envelope: bytes, chat_id: str) -> LinkDecision:
        d = self.gate.consider_envelope(envelope, chat_id)
        if not d.accepted:
            facts = {} if d.message is None else {"clock": d.message.clock}
            if d.stored_clock is not None:
                facts["stored"] = d.stored_clock
            self.bus.publish(E.MAGNETLINK_REJECTED, self.cid, reason=d.reason, detail=d.detail, **facts)
            return d
        now = self.clock.now()
        self.state.set_pending_link(self.cid, d.message.link, d.message.clock, now)
        self.bus.publish(E.MAGNETLINK_RECEIVED, self.cid, link=d.message.link, clock=d.message.clock)
        if self.job is not None:                      # a newer link cancels the running download
            self.job.cancel()
            self.job = None
        self.deadline = now + self.settle
        self.failures = 0
        self.set_waiting(f"waiting {self.settle:.0f} s for newer archive links", until=self.deadline)
        return d

    def start(self) -> None:
        """Resume at startup: an accepted link whose download or import had not finished continues at once, and
        archives downloaded but not imported (parked for a missing key, or cut off by a crash) are tried again:
        the parked set lives in the state database (imported = 0), not only in memory."""
        if self.state.pending_link(self.cid):
            self.deadline = self.clock.now()
            self.set_waiting("resuming the interrupted archive download")
        self._imported_ids()                                # a history replaced or restored: re-import
        try:
            self.finish_authors()                           # authors an interrupted import left pending
        except HistoryWriteError as err:
            self.set_waiting(f"message authors not recovered yet: {err}")
        left = self.state.archive_ids(self.cid, imported=False)
        if not left:
            return
        for aid in left:
            self.parked.setdefault(aid, "downloaded, not imported yet")
        try:
            self.retry_parked()
        except (OSError, ArchiveError, KeyMissing) as err:
            self.set_waiting(f"{len(left)} downloaded archive(s) not imported yet: {err}")

    def set_policy(self, policy: str, start: int | None = None, end: int | None = None) -> None:
        """A new choice applies to the link we already have: fetch (and import) what it adds."""
        from core.torrent.selection import Selection
        Selection(policy, start, end)  # validates (a range needs from < to)
        self.cfg.policy, self.cfg.range_start, self.cfg.range_end = policy, start, end
        info = self.state.archive_info(self.cid)
        if info.last_magnetlink_uri and not self.state.pending_link(self.cid):
            self.state.set_pending_link(self.cid, info.last_magnetlink_uri, info.magnetlink_clock, self.clock.now())
        if self.job is not None:
            self.job.cancel()
            self.job = None
        self.deadline = self.clock.now()

    # -- work --------------------------------------------------------------------------------------------
    def tick(self) -> None:
        if self.job is not None:
            if self.job.done.is_set():
                job, self.job = self.job, None
                self._finished(job)
            return
        pending = self.state.pending_link(self.cid)
        if pending is None or self.deadline is None or self.clock.now() < self.deadline:
            return
        self._start(pending[0])

    def _start(self, link: str) -> None:
        if self.fetcher is None:
            self.set_waiting("no BitTorrent session configured")
            return
        self.bus.publish(E.DOWNLOADING_HISTORY_ARCHIVES_STARTED, self.cid, link=link)
        self.set_waiting("fetching torrent metadata from peers")
        self.job = self.fetcher.fetch(link, self.paths.archive_dir, selection_for(self.cfg), community_id=self.cid,
                                      peers=self.peers)

    def _finished(self, job) -> None:
        snap = job.snapshot()
        if snap["state"] != "complete":
            if snap["state"] == "cancelled":
                return
            if snap["code"] == "key-missing":
                self.link_parked = snap["message"]
                self.deadline = None               # no retry loop: add_group_key() resumes it
                self.set_waiting("archive index parked: decryption key missing (resumes as soon as the community's "
                           "key arrives)")
                return
            self._retry_later(snap["code"], snap["message"], "download failed")
            return
        try:
            self.import_archives(job.entries, job.chosen)
        except HistoryWriteError as err:       # disk full, I/O error: keep the link, retry later, lose nothing
            self._retry_later(err.code, str(err), "could not write the history database")
            return
        pending = self.state.pending_link(self.cid)
        if pending:
            self.state.set_last_magnetlink(self.cid, pending[0])
            self.state.clear_pending_link(self.cid)
        self.bus.publish(E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED, self.cid)
        self.set_waiting(self._idle_reason())

    def _retry_later(self, code: str, message: str, what: str) -> None:
        """Back off (30 s, 2 min, 10 min, 30 min) and try the pending link again: never a tight loop."""
        self.failures += 1
        delay = RETRY_SECONDS[min(self.failures - 1, len(RETRY_SECONDS) - 1)]
        self.deadline = self.clock.now() + delay
        self.bus.publish(E.ERROR, self.cid, code=code, message=message)
        self.set_waiting(f"{what} ({message}); retrying in {delay} s", until=self.deadline)

    def retry_parked(self) -> int:
        """A key arrived (or the user asked): import the parked archives again, once."""
        from core.archive.codec import decode_index
        if self.link_parked is not None:
            self.link_parked = None
            self.deadline = self.clock.now()       # fetch again: the index can be opened now
            self.set_waiting("decryption key arrived: resuming the archive download")
        if not self.parked:
            return 0
        raw = read_index(self.paths.archive_dir / self.cid / INDEX_FILE)
        entries = decode_index(self.index_unwrap(raw) if self.index_unwrap else raw)
        for aid in [a for a in self.parked if a not in entries]:     # no longer in the folder's index
            self.parked[aid] = "not in the local archive index (fetched again with the next link)"
        n = self.import_archives(entries, [a for a in self.parked if a in entries])
        self.set_waiting(self._idle_reason())
        return n

    def _idle_reason(self) -> str:
        if not self.parked:
            return "up to date: waiting for the next archive link"
        keyless = sum(1 for r in self.parked.values() if r.startswith("decryption key missing"))
        if keyless:
            return (f"{keyless} archive(s) parked: decryption key missing (imported as soon as the community's "
                    "key arrives)")
        return f"{len(self.parked)} archive(s) could not be imported: {next(iter(self.parked.values()))}"

    def _imported_ids(self) -> set[str]:
        """The archives imported into the history. With a history database, its own record (written in the same
        transaction as the rows) decides, and the state's flag is brought in line: an archive the state calls
        imported but the history lacks (a history file lost, replaced or restored from a backup) is marked
        downloaded-not-imported, so that it is imported again instead of being skipped forever."""
        recorded = self.state.archive_ids(self.cid, imported=True)
        imported = getattr(self.hydrator, "imported", None)
        if imported is None:
            return recorded
        done = imported(self.cid)
        for aid in recorded - done:
            self.state.mark_archive(self.cid, aid, imported=False)
        for aid in done - recorded:
            self.state.mark_archive(self.cid, aid, imported=True)
        return done

    def import_archives(self, index: Mapping[str, IndexEntry], chosen) -> int:
        """Import what is not imported yet (a set difference on archive IDs), oldest window first, with the one
        importer's plan (core.history_import): whole windows, the chunks of a window together."""
        from core.history_import import plan_import
        plan = plan_import(index, chosen, self._imported_ids())
        folder = self.paths.archive_dir / self.cid
        total = 0
        prepare = getattr(self.hydrator, "prepare", None)      # reads the next window while this one is written
        for i, w in enumerate(plan):
            start, end = w.start, w.end
            group = {a: index[a] for a in w.archive_ids}
            if prepare is not None and i + 1 < len(plan):
                prepare(self.cid, folder, {a: index[a] for a in plan[i + 1].archive_ids})
            for aid in group:
                self.state.mark_archive(self.cid, aid, imported=False)
                self.bus.publish(E.HISTORY_ARCHIVE_DOWNLOADED, self.cid, archive_id=aid, start=start, end=end)
            self.bus.publish(E.IMPORTING_HISTORY_ARCHIVE_MESSAGES, self.cid, archives=list(group), done=i,
                             total=len(plan))
            try:
                total += self.hydrator(self.cid, folder, group) if self.hydrator else 0
            except KeyMissing as err:
                for aid in group:
                    self.parked[aid] = "decryption key missing"
                self.set_waiting(f"{len(group)} archive(s) parked: decryption key missing ({err}); "
                           "retried when a key arrives")
                continue
            except JobCancelled:       # the engine is stopping: this window stays "not imported", redone next start
                raise
            except ArchiveError as err:
                for aid in group:
                    self.parked[aid] = f"{err.code}: {err}"
                self.bus.publish(E.ERROR, self.cid, archive_id=err.archive_id, code=err.code, message=str(err))
                continue
            for aid in group:
                self.state.mark_archive(self.cid, aid, imported=True)
                self.parked.pop(aid, None)
        self.finish_authors()
        return total

    def finish_authors(self) -> int:
        """Fill in the authors that the windows' rows were written without (the history is visible before its
        signers are recovered; core.history_import.finish_authors), with progress: `archivist.progress` events
        (job "authors") and the waiting reason. Also what a crash left pending (start() calls it). Raises
        HistoryWriteError when the history cannot be written (what is not written stays pending)."""
        finish = getattr(self.hydrator, "finish_authors", None)
        if finish is None:
            return 0

        def progress(done: int, total: int) -> None:
            if total:
                self.bus.publish(E.PROGRESS, self.cid, job="authors", done=done, total=total)
            if done < total:
                self.set_waiting(f"history imported; recovering message authors: {done:,} of {total:,}")
        return finish(self.cid, progress)
