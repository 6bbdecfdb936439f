"""The member node (core/node/member.py): the settle time and the link that cancels a download, each waiting reason
and event with its data, the retry back-off and its cap, the parked archives and their resumption, the one
importer's plan (whole windows, oldest first, the next window read ahead) and the state database brought in line
with the history's own record, pinned against the survivors of `make mutation` (docs/QUALITY.md).

Real signed link envelopes, real SQLite (state, and the member history for the reference hydrator), real archive
folders and a fake clock. The transports are injected, as the node is built for: the fetcher hands back a job in
the state a test needs, and a recording hydrator raises what a test needs (the real one runs in the last tests)."""
from __future__ import annotations

import random
import threading

import pytest

from core.archive.errors import ArchiveError
from core.node import events as E
from core.node import member as M
from core.node.clock import FakeClock
from core.node.community import CommunityConfig, NodePaths
from core.node.hydrate import reference_hydrator
from core.node.links import FUTURE_CLOCK
from core.status.errors import KeyMissing
from core.storage.archive_state import ArchiveStateDB
from core.storage.history import HistoryWriteError
from core.storage.member_history import MemberHistory
from core.torrent.selection import Selection
from tests.support.chunked import T0, WEEK, build_folder, random_messages

from .test_links_mutants import CHAT, CID, LINK_A, LINK_B, envelope   # a community key, its signed links

NOW = 1_790_000_000                                      # seconds (the links' clocks are in ms)


class Job:
    """What a fetcher hands back: `done` is set when it ends; snapshot() says how."""

    def __init__(self, state="complete", code="", message="", entries=None, chosen=()):
        self.done, self.cancelled = threading.Event(), 0
        self.state, self.code, self.message = state, code, message
        self.entries, self.chosen = dict(entries or {}), list(chosen)

    def snapshot(self) -> dict:
        return {"state": self.state, "code": self.code, "message": self.message}

    def cancel(self) -> None:
        self.cancelled += 1


class Fetcher:
    def __init__(self):
        self.calls, self.jobs = [], []

    def fetch(self, link, data_dir, selection, **kw):
        self.calls.append((link, data_dir, selection, kw))
        self.jobs.append(Job())
        return self.jobs[-1]


class Hydrator:
    """Records each window it is given and keeps its own record of what it imported (`imported`), as the history
    database does; `fail` maps an archive ID to the error its window raises."""

    def __init__(self, fail=None, authors=None):
        self.calls, self.prepared, self.done, self.fail = [], [], set(), dict(fail or {})
        self.authors = authors                # None: no finish_authors; else the (done, total) steps it reports

    def __call__(self, cid, folder, group):
        self.calls.append((cid, folder, dict(group)))
        for aid in group:
            if aid in self.fail:
                raise self.fail[aid]
        self.done |= set(group)
        return 10 * len(group)

    def imported(self, cid):
        assert cid == CID
        return set(self.done)

    def prepare(self, cid, folder, group):
        self.prepared.append((cid, folder, sorted(group)))

    def __getattr__(self, name):
        if name == "finish_authors" and self.authors is not None:
            return self._finish
        raise AttributeError(name)

    def _finish(self, cid, progress):
        assert cid == CID
        for step in self.authors:
            if isinstance(step, Exception):
                raise step
            progress(*step)
        return len(self.authors)


class Node:
    """A MemberNode on real SQLite and a real folder, with its events and a fake clock."""

    def __init__(self, tmp_path, **kw):
        self.paths = NodePaths(tmp_path / "member")
        self.cfg = CommunityConfig(community_id=CID, role="member", channel_chat_ids=[])
        self.state = ArchiveStateDB(self.paths.ensure().state_db)
        self.clock, self.events = FakeClock(NOW), []
        bus = E.EventBus()
        bus.subscribe(self.events.append)
        self.node = M.MemberNode(self.cfg, self.paths, self.state, bus, self.clock, **kw)

    def of(self, name):
        assert {e.community_id for e in self.events} <= {CID}              # every event names the community
        return [e.data for e in self.events if e.name == name]

    def waits(self):
        return [d["reason"] for d in self.of(E.WAITING)]

    def folder(self, weeks=3, count=300, cap=6_000, seed=1):
        return build_folder(self.paths.archive_dir / CID, random_messages(random.Random(seed), weeks, count),
                            cap=cap, weeks=weeks)


@pytest.fixture
def make(tmp_path):
    made = []

    def _make(**kw):
        made.append(Node(tmp_path / str(len(made)), **kw))
        return made[-1]
    yield _make
    for n in made:
        n.state.close()


def test_constants_and_defaults(make):
    assert M.SETTLE_SECONDS == 20.0 and M.RETRY_SECONDS == (30, 120, 600, 1800)
    n = make(peers=["127.0.0.1:1"])
    node = n.node
    assert node.cid == CID and node.settle == 20.0 and node.peers == ("127.0.0.1:1",)
    assert (node.deadline, node.job, node.failures, node.parked, node.link_parked, node.index_unwrap) == (
        None, None, 0, {}, None, None)
    assert node.waiting_reason == "no archive link received yet" and node.paths.archive_dir.is_dir()


def test_selection_for_each_policy():
    cfg = CommunityConfig(community_id=CID)
    assert M.selection_for(cfg) == Selection("all")
    cfg.policy = "latest"
    assert M.selection_for(cfg) == Selection("latest")
    cfg.policy, cfg.range_start, cfg.range_end = "range", 5, 9
    assert M.selection_for(cfg) == Selection("range", 5, 9)


def test_link_gate_reads_the_clock_in_milliseconds(make):
    n = make()
    ahead = NOW * 1000 + 20_000                             # the gate's limit: 20 s ahead of our clock, in ms
    d = n.node.on_envelope(envelope(ahead + 1, LINK_A), CHAT)
    assert (d.accepted, d.reason) == (False, FUTURE_CLOCK)
    assert n.node.on_envelope(envelope(ahead, LINK_A), CHAT).accepted


def test_rejected_link_is_an_event_and_changes_nothing(make):
    n = make()
    d = n.node.on_envelope(b"\x00 not an envelope", CHAT)
    assert not d.accepted
    assert n.of(E.MAGNETLINK_REJECTED) == [{"reason": d.reason, "detail": d.detail}] and d.detail
    assert n.state.pending_link(CID) is None and n.node.deadline is None and n.of(E.WAITING) == []


def test_an_older_link_event_carries_both_clocks(make):
    """The event says which clocks were compared, so the log need not read them back out of the sentence."""
    n = make()
    assert n.node.on_envelope(envelope(NOW * 1000, LINK_A), CHAT).accepted
    d = n.node.on_envelope(envelope(NOW * 1000 - 5, LINK_B), CHAT)
    assert (d.accepted, d.reason, d.stored_clock) == (False, "older-clock", NOW * 1000)
    assert n.of(E.MAGNETLINK_REJECTED) == [{"reason": "older-clock", "detail": d.detail, "clock": NOW * 1000 - 5,
                                            "stored": NOW * 1000}]


def test_accepted_link_waits_the_settle_time_and_cancels_the_download(make):
    n = make(fetcher=Fetcher(), settle=7.4)
    running = n.node.job = Job()
    n.node.failures = 3
    d = n.node.on_envelope(envelope(NOW * 1000 - 5, LINK_A), CHAT)
    assert d.accepted and running.cancelled == 1 and n.node.job is None and n.node.failures == 0
    assert n.state.pending_link(CID) == (LINK_A, NOW * 1000 - 5, NOW)
    assert n.of(E.MAGNETLINK_RECEIVED) == [{"link": LINK_A, "clock": NOW * 1000 - 5}]
    assert n.node.deadline == NOW + 7.4
    assert n.of(E.WAITING) == [{"reason": "waiting 7 s for newer archive links", "until": NOW + 7.4}]
    assert n.node.waiting_reason == "waiting 7 s for newer archive links"


def test_tick_starts_at_the_deadline_and_not_before(make):
    fetcher = Fetcher()
    n = make(fetcher=fetcher, peers=("h:1",))
    n.node.tick()                                           # nothing pending
    n.node.on_envelope(envelope(NOW * 1000, LINK_A), CHAT)
    n.clock.set(NOW + 20 - 0.001)
    n.node.tick()
    assert fetcher.calls == []
    n.clock.set(NOW + 20)
    n.node.tick()
    assert fetcher.calls == [(LINK_A, n.paths.archive_dir, Selection("all"), {"community_id": CID, "peers": ("h:1",)})]
    assert n.node.job is fetcher.jobs[0]
    assert n.of(E.DOWNLOADING_HISTORY_ARCHIVES_STARTED) == [{"link": LINK_A}]
    assert n.waits()[-1] == "fetching torrent metadata from peers"
    n.node.tick()                                           # the job runs: nothing new
    assert len(fetcher.calls) == 1 and n.node.job is fetcher.jobs[0]


def test_tick_without_a_deadline_or_a_fetcher(make):
    n = make()
    n.state.set_pending_link(CID, LINK_A, 1, NOW)
    n.node.tick()                                           # a pending link but no deadline
    assert n.of(E.WAITING) == []
    n.node.deadline = NOW
    n.node.tick()
    assert n.waits() == ["no BitTorrent session configured"] and n.node.job is None
    assert n.of(E.DOWNLOADING_HISTORY_ARCHIVES_STARTED) == []


def finish(n, job):
    n.node.job = job
    job.done.set()
    n.node.tick()


def test_cancelled_download_ends_quietly(make):
    n = make()
    finish(n, Job("cancelled", "x", "y"))
    assert n.node.job is None and n.events == [] and n.node.failures == 0


def test_download_that_needs_a_key_parks_the_link(make):
    n = make()
    n.node.deadline = NOW
    finish(n, Job("failed", "key-missing", "index: no key 0xab"))
    assert n.node.link_parked == "index: no key 0xab" and n.node.deadline is None and n.node.failures == 0
    assert n.waits() == ["archive index parked: decryption key missing (resumes as soon as the community's key "
                         "arrives)"]
    assert n.of(E.ERROR) == []


def test_failed_downloads_back_off_to_thirty_minutes(make):
    n = make()
    steps = []
    for _ in range(6):
        finish(n, Job("failed", "no-peers", "no peer answered"))
        steps.append(n.node.deadline - NOW)
    assert steps == [30, 120, 600, 1800, 1800, 1800] and n.node.failures == 6
    assert n.of(E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED) == []             # no import after a failure
    assert n.of(E.ERROR)[0] == {"code": "no-peers", "message": "no peer answered"}
    assert n.of(E.WAITING)[0] == {"reason": "download failed (no peer answered); retrying in 30 s", "until": NOW + 30}


def test_complete_download_imports_and_records_the_link(make):
    h = Hydrator()
    n = make(hydrator=h)
    f = n.folder()
    n.state.set_pending_link(CID, LINK_B, 9, NOW)
    ids = [a for a, _ in f.ordered()]
    finish(n, Job(entries=f.entries, chosen=ids))
    assert sorted(a for c in h.calls for a in c[2]) == sorted(ids)
    assert n.state.pending_link(CID) is None and n.state.archive_info(CID).last_magnetlink_uri == LINK_B
    assert n.of(E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED) == [{}]
    assert n.node.waiting_reason == "up to date: waiting for the next archive link"
    assert n.state.archive_ids(CID, imported=True) == set(ids)


def test_complete_download_without_a_pending_link_keeps_the_last_one(make):
    n = make(hydrator=Hydrator())
    n.state.set_last_magnetlink(CID, LINK_A)
    finish(n, Job())
    assert n.state.archive_info(CID).last_magnetlink_uri == LINK_A
    assert n.of(E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED) == [{}]


def test_history_that_cannot_be_written_keeps_the_link_and_retries(make):
    n = make(hydrator=Hydrator(authors=[HistoryWriteError("disk full")]))
    n.state.set_pending_link(CID, LINK_A, 9, NOW)
    finish(n, Job())
    assert n.state.pending_link(CID) == (LINK_A, 9, NOW) and n.node.deadline == NOW + 30
    assert n.of(E.ERROR) == [{"code": "history-write-failed", "message": "disk full"}]
    assert n.waits()[-1] == "could not write the history database (disk full); retrying in 30 s"
    assert n.of(E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED) == []


def test_import_plan_events_read_ahead_and_the_total(make):
    h = Hydrator()
    n = make(hydrator=h)
    f = n.folder()
    windows = sorted({(e.start, e.end) for e in f.entries.values()})
    by_window = [sorted(a for a, e in f.entries.items() if (e.start, e.end) == w) for w in windows]
    assert len(windows) == 3 and all(len(ids) > 1 for ids in by_window)
    assert n.node.import_archives(f.entries, list(f.entries)) == 10 * len(f.entries)
    assert [sorted(c[2]) for c in h.calls] == by_window                      # one call per window, oldest first
    assert all(c[:2] == (CID, f.path) for c in h.calls) and all(c[2] == {a: f.entries[a] for a in c[2]}
                                                                for c in h.calls)
    assert h.prepared == [(CID, f.path, by_window[1]), (CID, f.path, by_window[2])]   # the next window, read ahead
    assert n.of(E.IMPORTING_HISTORY_ARCHIVE_MESSAGES) == [
        {"archives": list(h.calls[i][2]), "done": i, "total": 3} for i in range(3)]
    got = n.of(E.HISTORY_ARCHIVE_DOWNLOADED)
    assert got == [{"archive_id": a, "start": w[0], "end": w[1]} for w, ids in zip(windows, by_window)
                   for a in h.calls[windows.index(w)][2]] and len(got) == len(f.entries)
    assert n.state.archive_ids(CID, imported=True) == set(f.entries)
    assert n.node.import_archives(f.entries, list(f.entries)) == 0 and len(h.calls) == 3   # nothing left


def test_import_of_what_the_history_already_holds_skips_it(make):
    h = Hydrator()
    n = make(hydrator=h)
    f = n.folder()
    first = min(f.entries.values(), key=lambda e: e.start)
    old = {a for a, e in f.entries.items() if e.start == first.start}
    h.done |= old
    n.node.import_archives(f.entries, list(f.entries))
    assert not old & {a for c in h.calls for a in c[2]} and len(h.calls) == 2
    assert n.of(E.IMPORTING_HISTORY_ARCHIVE_MESSAGES)[0]["total"] == 2


def test_import_without_a_hydrator_marks_and_counts_nothing(make):
    n = make()
    f = n.folder(weeks=1, count=40)
    assert n.node.import_archives(f.entries, list(f.entries)) == 0
    assert n.state.archive_ids(CID, imported=True) == set(f.entries)      # the state alone records it


def test_import_errors_park_their_window_only(make):
    n = make()
    f = n.folder()
    ordered = [a for a, _ in f.ordered()]
    w = {a: (f.entries[a].start, f.entries[a].end) for a in ordered}
    windows = sorted(set(w.values()))
    keyless, broken, good = ([a for a in ordered if w[a] == x] for x in windows)
    h = Hydrator(fail={keyless[0]: KeyMissing("no key for 0x01"),
                       broken[-1]: ArchiveError("bad bytes", code="archive-undecodable", archive_id=broken[-1])})
    n.node.hydrator = h
    n.node.parked[good[0]] = "an older reason"
    assert n.node.import_archives(f.entries, ordered) == 10 * len(good)     # the windows after a failed one too
    assert n.node.parked == {**{a: "decryption key missing" for a in keyless},
                             **{a: "archive-undecodable: bad bytes" for a in broken}}
    assert f"{len(keyless)} archive(s) parked: decryption key missing (no key for 0x01); retried when a key " \
           "arrives" in n.waits()
    assert n.of(E.ERROR) == [{"archive_id": broken[-1], "code": "archive-undecodable", "message": "bad bytes"}]
    assert n.state.archive_ids(CID, imported=True) == set(good)
    assert n.state.archive_ids(CID, imported=False) == set(keyless + broken)


def test_idle_reasons(make):
    node = make().node
    assert node._idle_reason() == "up to date: waiting for the next archive link"
    node.parked = {"a": "x: first", "b": "y: second"}
    assert node._idle_reason() == "2 archive(s) could not be imported: x: first"
    node.parked["c"] = "decryption key missing"
    assert node._idle_reason() == ("1 archive(s) parked: decryption key missing (imported as soon as the "
                                   "community's key arrives)")


def test_retry_parked_resumes_a_parked_link_and_imports_what_waits(make):
    h = Hydrator()
    n = make(hydrator=h)
    assert n.node.retry_parked() == 0 and n.events == []
    n.node.link_parked = "index: no key"
    n.clock.set(NOW + 5)
    assert n.node.retry_parked() == 0
    assert n.node.link_parked is None and n.node.deadline == NOW + 5
    assert n.waits() == ["decryption key arrived: resuming the archive download"]
    f = n.folder(weeks=2)
    wanted = [a for a, _ in f.ordered()]
    n.node.parked = {a: "decryption key missing" for a in wanted} | {"0xgone": "decryption key missing"}
    assert n.node.retry_parked() == 10 * len(wanted)
    assert n.node.parked == {"0xgone": "not in the local archive index (fetched again with the next link)"}
    assert n.waits()[-1] == "1 archive(s) could not be imported: not in the local archive index (fetched again " \
                            "with the next link)"


def test_retry_parked_opens_the_index_with_index_unwrap(make):
    n = make(hydrator=Hydrator())
    f = n.folder(weeks=1, count=40)
    raw = f.index_path.read_bytes()
    f.index_path.write_bytes(raw[::-1])                      # "encrypted": only the unwrap reads it
    n.node.index_unwrap = lambda b: b[::-1]
    n.node.parked = {a: "downloaded, not imported yet" for a in f.entries}
    assert n.node.retry_parked() == 10 * len(f.entries) and n.node.parked == {}


def test_start_resumes_a_pending_link_at_once(make):
    n = make()
    n.state.set_pending_link(CID, LINK_A, 1, NOW - 100)
    n.clock.set(NOW + 50)
    n.node.start()
    assert n.node.deadline == NOW + 50 and n.waits() == ["resuming the interrupted archive download"]


def test_start_without_work_says_nothing(make):
    n = make(hydrator=Hydrator())
    n.node.start()
    assert n.events == [] and n.node.deadline is None and n.node.parked == {}


def test_start_imports_what_was_downloaded_but_not_imported(make):
    h = Hydrator()
    n = make(hydrator=h)
    f = n.folder(weeks=2)
    for a in f.entries:
        n.state.mark_archive(CID, a, imported=False)
    n.node.start()
    assert h.done == set(f.entries) and n.node.parked == {}
    assert n.waits()[-1] == "up to date: waiting for the next archive link"


def test_start_keeps_them_parked_when_the_index_cannot_be_read(make):
    n = make(hydrator=Hydrator())
    n.state.mark_archive(CID, "0xaa", imported=False)
    n.state.mark_archive(CID, "0xbb", imported=False)
    n.node.start()                                           # no folder: the index is missing
    assert n.node.parked == {"0xaa": "downloaded, not imported yet", "0xbb": "downloaded, not imported yet"}
    assert n.waits()[-1].startswith("2 downloaded archive(s) not imported yet: [Errno 2] No such file")


def test_start_brings_the_state_in_line_with_the_history(make):
    h = Hydrator()
    n = make(hydrator=h)
    n.state.mark_archive(CID, "0xlost", imported=True)       # the history was replaced: import it again
    h.done = {"0xkept"}
    n.node.start()
    assert n.state.archive_ids(CID, imported=True) == {"0xkept"}
    assert n.state.archive_ids(CID, imported=False) == {"0xlost"}
    assert n.node.parked == {"0xlost": "downloaded, not imported yet"}      # its folder is gone: it waits
    assert n.node._imported_ids() == {"0xkept"}
    plain = make()                                           # no history record: the state decides
    plain.state.mark_archive(CID, "0xs", imported=True)
    plain.state.mark_archive(CID, "0xn", imported=False)    # downloaded, not imported: not in the answer
    assert plain.node._imported_ids() == {"0xs"}


def test_finish_authors_reports_progress_and_waits(make):
    n = make(hydrator=Hydrator(authors=[(0, 0), (0, 2000), (2000, 2000)]))
    assert n.node.finish_authors() == 3
    assert n.of(E.PROGRESS) == [{"job": "authors", "done": 0, "total": 2000},
                                {"job": "authors", "done": 2000, "total": 2000}]
    assert n.waits() == ["history imported; recovering message authors: 0 of 2,000"]
    assert make(hydrator=Hydrator()).node.finish_authors() == 0


def test_start_says_when_authors_cannot_be_written(make):
    n = make(hydrator=Hydrator(authors=[HistoryWriteError("read-only file")]))
    n.node.start()
    assert n.waits() == ["message authors not recovered yet: read-only file"]


def test_set_policy_fetches_again_with_the_last_link(make):
    n = make(hydrator=Hydrator())
    with pytest.raises(ValueError, match="a time range needs from < to"):
        n.node.set_policy("range", 9, 9)
    assert n.cfg.policy == "all"
    n.node.set_policy("latest")                              # no link yet: nothing to fetch again
    assert n.state.pending_link(CID) is None and n.node.deadline == NOW
    n.state.set_magnetlink_clock(CID, 77)
    n.state.set_last_magnetlink(CID, LINK_A)
    running = n.node.job = Job()
    n.clock.set(NOW + 3)
    n.node.set_policy("range", 5, 9)
    assert (n.cfg.policy, n.cfg.range_start, n.cfg.range_end) == ("range", 5, 9)
    assert n.state.pending_link(CID) == (LINK_A, 77, NOW + 3) and n.node.deadline == NOW + 3
    assert running.cancelled == 1 and n.node.job is None
    n.state.set_pending_link(CID, LINK_B, 80, NOW)
    n.node.set_policy("all")                                 # a pending link stays as it is
    assert n.state.pending_link(CID) == (LINK_B, 80, NOW)


def test_reference_hydrator_imports_every_message_once(tmp_path, make):
    history = MemberHistory(tmp_path / "history.sqlite")
    try:
        n = make(hydrator=reference_hydrator(history))
        f = n.folder(weeks=3, count=200)
        assert n.node.import_archives(f.entries, Selection("latest").choose(f.entries)) > 0
        newest = {a for a, e in f.entries.items() if e.start == T0 + 2 * WEEK}
        assert n.state.archive_ids(CID, imported=True) == newest == history.imported_archive_ids(CID)
        n.node.import_archives(f.entries, list(f.entries))
        assert history.count(CID) == 200 and history.imported_archive_ids(CID) == set(f.entries)
    finally:
        history.close()
