"""Rows first, authors after (issue 17), and still no loss (issue 14): a member's import writes each window's rows
without recovering their signers, then fills the authors in. A crash between or during the two passes loses
nothing, and the next start (member node) or run (`archivist import`) finishes the authors: the history ends
exactly as an import that recovered every author inside its window's transaction. Real signed Status messages,
real archive folders, real SQLite, a real SIGKILL."""
from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys

import pytest

from core.archive.codec import ArchiveMessage
from core.node import events as E
from core.node.clock import FakeClock
from core.node.community import CommunityConfig, NodePaths
from core.node.hydrate import reference_hydrator
from core.node.import_cli import import_folder
from core.node.member import MemberNode
from core.storage import history as H
from core.storage.archive_state import ArchiveStateDB
from core.storage.member_history import MemberHistory
from core.torrent.selection import Selection
from tests.integration.node.test_import_safety import ROOT
from tests.support.chunked import COMMUNITY, T0, WEEK, build_folder, random_messages
from tests.unit.test_history_import_authors import messages as signed_messages

WEEKS = 3


def status_messages(rng: random.Random, n: int) -> list[ArchiveMessage]:
    """n messages of every kind (mostly signed chat messages) spread over WEEKS windows."""
    return [ArchiveMessage(m.sig, T0 + rng.randrange(WEEKS * WEEK), m.topic, m.payload, hash=m.hash)
            for m in signed_messages(n)]


def rows_of(db) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return H.messages(con, COMMUNITY)
    finally:
        con.close()


@pytest.fixture
def folder_and_reference(tmp_path):
    """A chunked folder and the history that an import recovering every author in its window's transaction
    writes (defer_authors=False: the reference)."""
    ms = status_messages(random.Random(17), 400)
    folder = build_folder(NodePaths(tmp_path / "member").ensure().archive_dir / COMMUNITY, ms, cap=9_000,
                          weeks=WEEKS)                 # where a member node downloads it
    ref = tmp_path / "reference.sqlite"
    rep = import_folder(folder.path, ref, COMMUNITY, Selection("all"), defer_authors=False)
    assert rep.messages == len(ms) and not rep.failed
    want = rows_of(ref)
    assert sum(1 for r in want if r[4] and r[4] != b"envelope-sig") > 150       # authors recovered
    return folder, want


def test_a_crash_between_the_passes_is_finished_by_the_next_start(tmp_path, folder_and_reference, monkeypatch):
    folder, want = folder_and_reference
    paths = NodePaths(tmp_path / "member")
    cfg = CommunityConfig(community_id=COMMUNITY, role="member")
    history = MemberHistory(paths.ensure().history_db)
    state = ArchiveStateDB(paths.state_db)
    hydrator = reference_hydrator(history)

    def crash(cid, progress=None):                  # the process dies once the windows are written
        raise H.HistoryWriteError("injected: the process died before the authors")
    monkeypatch.setattr(hydrator, "finish_authors", crash)
    node = MemberNode(cfg, paths, state, E.EventBus(), FakeClock(), hydrator=hydrator)
    with pytest.raises(H.HistoryWriteError):
        node.import_archives(folder.entries, list(folder.entries))
    visible = rows_of(paths.history_db)
    assert [r[1] for r in visible] == [r[1] for r in want]                     # every message visible already
    texts = [(v[9], r[9]) for v, r in zip(visible, want) if r[9] is not None]
    assert len(texts) > 100 and all(a == b for a, b in texts)                  # with its text
    pending = history.pending_author_count(COMMUNITY)
    assert pending > 150 and visible != want                                   # the authors are not there yet
    assert history.imported_archive_ids(COMMUNITY) == set(folder.entries)
    history.close()
    state.close()

    # the restart: a new node on the same files finishes the authors at start, with progress
    history = MemberHistory(paths.history_db)
    state = ArchiveStateDB(paths.state_db)
    bus, seen = E.EventBus(), []
    bus.subscribe(lambda ev: seen.append(ev.data) if ev.name == E.PROGRESS else None)
    node = MemberNode(cfg, paths, state, bus, FakeClock(), hydrator=reference_hydrator(history))
    node.start()
    assert rows_of(paths.history_db) == want
    assert history.pending_author_count(COMMUNITY) == 0
    assert seen[0] == {"job": "authors", "done": 0, "total": pending}
    assert seen[-1] == {"job": "authors", "done": pending, "total": pending}
    history.close()
    state.close()


def test_kill9_in_either_pass_loses_nothing_and_the_next_run_finishes(tmp_path, folder_and_reference):
    """SIGKILL inside a window's transaction, or inside a batch of authors (batches of 64: some committed
    before the kill): the next `archivist import` run ends with exactly the reference history."""
    folder, want = folder_and_reference
    rng = random.Random(9)
    kills = {"rows": 0, "authors": 0}
    for trial in range(6):
        db = tmp_path / f"h{trial}.sqlite"
        where = "rows" if trial % 2 == 0 else "authors"
        flag = "--kill-at" if where == "rows" else "--kill-in-authors"
        killed = child_killing(folder.path, db, flag, rng.randrange(len(want) if where == "rows" else 250))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        kills[where] += 1
        if where == "authors":                                  # every row was visible before the kill
            got = rows_of(db)
            assert [r[1] for r in got] == [r[1] for r in want] and got != want
        rep = import_folder(folder.path, db, COMMUNITY, Selection("all"))     # the rerun
        assert not rep.failed
        assert rows_of(db) == want, f"trial {trial} ({where})"
        h = MemberHistory(db)
        assert h.pending_author_count(COMMUNITY) == 0
        h.close()
    assert kills == {"rows": 3, "authors": 3}


def child_killing(folder, db, flag, n):
    """tests/integration/node/import_child.py: `archivist import --all` that SIGKILLs itself at row/author n."""
    args = [sys.executable, "-m", "tests.integration.node.import_child", str(folder), str(db), "all", flag, str(n)]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_damaged_window_read_ahead_fails_alone_and_in_its_turn(tmp_path, folder_and_reference):
    """The next window is read in a thread while the current one is written (hydrate.prepare): a damaged archive
    there is reported for its own window, when that window's turn comes; the others are imported whole."""
    folder, want = folder_and_reference
    ordered = folder.ordered()
    windows = sorted({(e.start, e.end) for _, e in ordered})
    bad_id, bad = next((a, e) for a, e in ordered if (e.start, e.end) == windows[1])
    with open(folder.data_path, "r+b") as f:
        f.seek(bad.offset)
        f.write(b"\xff" * 8)
    db = tmp_path / "h.sqlite"
    rep = import_folder(folder.path, db, COMMUNITY, Selection("all"), read_ahead=True)   # small: read ahead anyway
    second = {a for a, e in ordered if (e.start, e.end) == windows[1]}
    assert bad_id in rep.failed and set(rep.failed) == second and rep.windows == len(windows) - 1
    lo, hi = windows[1]
    assert rows_of(db) == [r for r in want if not lo <= r[2] < hi]           # whole windows, authors done


def test_the_second_pass_in_a_worker_process_gives_the_same_history(tmp_path, folder_and_reference):
    """With the engine's offloader (the window's node and `archivist node`), both passes run in a worker process
    (hydrate_job, authors_job); the progress comes back over its socket."""
    from core.node.hydrate import offloaded_hydrator
    from core.node.offload import Offloader
    folder, want = folder_and_reference
    paths = NodePaths(tmp_path / "member")
    history = MemberHistory(paths.ensure().history_db)
    state = ArchiveStateDB(paths.state_db)
    bus, seen = E.EventBus(), []
    bus.subscribe(lambda ev: seen.append(ev.data["done"]) if ev.name == E.PROGRESS else None)
    off = Offloader()
    try:
        hydrator = offloaded_hydrator(off, reference_hydrator(history), None)
        node = MemberNode(CommunityConfig(community_id=COMMUNITY, role="member"), paths, state, bus, FakeClock(),
                          hydrator=hydrator)
        node.import_archives(folder.entries, list(folder.entries))
        assert off.done["authors_job"] == 1 and off.done["hydrate_job"] == WEEKS
    finally:
        off.close()
    assert rows_of(paths.history_db) == want
    assert seen[0] == 0 and seen[-1] == 250 and seen == sorted(seen)        # the 5 signed kinds of 8, of 400
    history.close()
    state.close()


def test_nothing_pending_asks_no_worker(tmp_path, folder_and_reference):
    """A member's start finishes what a crash left (MemberNode.start -> finish_authors). With no author pending and
    no window written through the worker since its last pass, the answer (0) comes without a worker process: the
    member's first store query used to wait for one to start. Authors a crash left, or a window written through the
    worker, still go to the worker."""
    from core.node.hydrate import offloaded_hydrator
    from core.node.offload import Offloader
    folder, want = folder_and_reference
    history = MemberHistory(tmp_path / "history.sqlite")
    off = Offloader()
    try:
        seen = []
        hydrator = offloaded_hydrator(off, reference_hydrator(history), None)
        assert hydrator.finish_authors(COMMUNITY, lambda done, total: seen.append((done, total))) == 0
        assert seen == [(0, 0)] and off.started == 0                      # no worker asked, none started
        window = {a: e for a, e in folder.entries.items() if e.start == T0}      # the first week's chunks
        reference_hydrator(history)(COMMUNITY, folder.path, window)       # in process: its authors left pending
        pending = history.pending_author_count(COMMUNITY)
        assert pending > 0
        hydrator = offloaded_hydrator(off, reference_hydrator(history), None)   # the next start
        assert hydrator.finish_authors(COMMUNITY) == pending and off.done["authors_job"] == 1
        rest = {a: e for a, e in folder.entries.items() if a not in window}
        for start in sorted({e.start for e in rest.values()}):
            hydrator(COMMUNITY, folder.path, {a: e for a, e in rest.items() if e.start == start})
        hydrator.finish_authors(COMMUNITY)
        assert off.done["authors_job"] == 2 and off.done["hydrate_job"] == WEEKS - 1
        # a window with no signed message leaves no author pending, but the worker's pass still ends its import
        # (the worker's connection makes the chat index again: MemberHistory.end_import)
        other = MemberHistory(tmp_path / "unsigned.sqlite")
        unsigned = build_folder(tmp_path / "unsigned" / COMMUNITY, random_messages(random.Random(3), 1, 50),
                                cap=100_000, weeks=1)
        hydrator = offloaded_hydrator(off, reference_hydrator(other), None)
        assert hydrator(COMMUNITY, unsigned.path, dict(unsigned.entries)) == 50
        assert other.pending_author_count(COMMUNITY) == 0
        assert hydrator.finish_authors(COMMUNITY) == 0 and off.done["authors_job"] == 3
        assert hydrator.finish_authors(COMMUNITY) == 0 and off.done["authors_job"] == 3    # its pass ended it
        other.close()
    finally:
        off.close()
    assert rows_of(tmp_path / "history.sqlite") == want
    history.close()
