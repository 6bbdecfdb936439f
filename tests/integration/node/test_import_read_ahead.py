"""The import's read ahead (core.node.hydrate: prepare, read_ahead_pays): the next window is decoded in a RowPool
worker while this one is written only when that pays, it starts once the window being written has its own rows,
and the history is the same whichever way each window was decoded. Real signed Status messages in a real archive
folder, real SQLite, real worker processes."""
from __future__ import annotations

import random

from core.history_import import shared_pool
from core.node.community import NodePaths
from core.node.hydrate import READ_AHEAD_MIN_BYTES, read_ahead_pays, reference_hydrator
from core.node.import_cli import bytes_left, import_folder
from core.storage import history as H
from core.storage.member_history import MemberHistory
from core.torrent.selection import Selection
from tests.integration.node.test_deferred_authors import WEEKS, rows_of, status_messages
from tests.support.chunked import COMMUNITY, build_folder


def test_the_read_ahead_pays_for_enough_bytes_left_and_a_free_core():
    big, small = READ_AHEAD_MIN_BYTES, READ_AHEAD_MIN_BYTES - 1
    assert read_ahead_pays(big, False, load=0.5, cores=2)
    assert read_ahead_pays(None, False, load=0.5, cores=2)              # the member node: size not known
    assert not read_ahead_pays(small, False, load=0.0, cores=8)         # too little left for the pool's start
    assert read_ahead_pays(small, True, load=0.0, cores=8)              # ... unless the pool runs already
    assert read_ahead_pays(big, False, load=1.0, cores=2)               # one core free
    assert not read_ahead_pays(big, False, load=1.01, cores=2)          # none free: decoded in turn
    assert not read_ahead_pays(big, True, load=3.0, cores=2)
    assert not read_ahead_pays(big, False, load=0.0, cores=1)


def _plan(folder):
    from core.history_import import plan_import
    return plan_import(folder.entries, list(folder.entries))


def test_windows_read_ahead_or_in_turn_give_the_same_history_and_the_first_is_read_before_any(tmp_path):
    ms = status_messages(random.Random(5), 300)
    folder = build_folder(NodePaths(tmp_path / "member").ensure().archive_dir / COMMUNITY, ms, cap=9_000,
                          weeks=WEEKS)
    plan = _plan(folder)
    assert len(plan) == WEEKS
    pool = shared_pool()
    old = pool.PREVIEW_MIN_BYTES
    pool.PREVIEW_MIN_BYTES = 1                    # small windows: decoded in the worker all the same
    got = {}
    try:
        for ahead in (True, False):
            history = MemberHistory(tmp_path / f"h{ahead}.sqlite")
            hydrate = reference_hydrator(history, read_ahead=ahead)
            for i, w in enumerate(plan):
                if i + 1 < len(plan):
                    hydrate.prepare(COMMUNITY, folder.path, {a: folder.entries[a] for a in plan[i + 1].archive_ids})
                    if i == 0:                    # the first window's rows are not read yet: nothing started
                        assert hydrate.windows_read_ahead == 0
                hydrate(COMMUNITY, folder.path, {a: folder.entries[a] for a in w.archive_ids})
                assert hydrate.windows_read_ahead == (min(i + 1, len(plan) - 1) if ahead else 0)
            if ahead:                             # the read ahead decoded in the worker process
                assert pool.running
            hydrate.finish_authors(COMMUNITY)
            history.close()
            got[ahead] = rows_of(tmp_path / f"h{ahead}.sqlite")
    finally:
        pool.PREVIEW_MIN_BYTES = old
    assert got[True] == got[False] and len(got[True]) == len(ms)
    ref = tmp_path / "ref.sqlite"
    assert not import_folder(folder.path, ref, COMMUNITY, Selection("all"), defer_authors=False).failed
    assert rows_of(ref) == got[True]                                   # the reference: authors in each window


def test_a_small_import_decodes_each_window_in_turn(tmp_path):
    """A hydrator told that few bytes are left (prepare's rest_bytes, which `archivist import` computes with
    bytes_left) reads nothing ahead and starts no worker while no pool runs, whatever the load; the import is whole.
    """
    shared_pool().shutdown()
    ms = status_messages(random.Random(6), 200)
    folder = build_folder(tmp_path / COMMUNITY, ms, cap=9_000, weeks=WEEKS)
    plan = _plan(folder)
    rest = bytes_left(folder.entries, plan)
    sizes = [sum(folder.entries[a].size for a in w.archive_ids) for w in plan]
    assert rest == [sum(sizes[i:]) for i in range(len(plan))] and rest[0] == sum(e.size for e in folder.entries.values())
    history = MemberHistory(tmp_path / "h.sqlite")
    hydrate = reference_hydrator(history)
    for i, w in enumerate(plan):
        if i + 1 < len(plan):
            hydrate.prepare(COMMUNITY, folder.path, {a: folder.entries[a] for a in plan[i + 1].archive_ids},
                            rest[i + 1])
        hydrate(COMMUNITY, folder.path, {a: folder.entries[a] for a in w.archive_ids})
    assert hydrate.windows_read_ahead == 0 and not shared_pool().running
    hydrate.finish_authors(COMMUNITY)
    history.close()
    rep = import_folder(folder.path, tmp_path / "cli.sqlite", COMMUNITY, Selection("all"))
    assert rep.windows == WEEKS and rep.messages == len(ms) and not rep.failed
    assert rows_of(tmp_path / "cli.sqlite") == rows_of(tmp_path / "h.sqlite")
    con = H.connect(tmp_path / "h.sqlite")
    assert H.count(con, COMMUNITY) == len(ms) and H.pending_author_count(con, COMMUNITY) == 0
    con.close()


def test_with_the_authors_inline_the_next_window_is_read_ahead_at_once_whatever_is_left(tmp_path):
    """defer_authors=False: the workers recover every signer of the next window while this one is written, so the
    read ahead starts when prepare() is called, even with a few bytes left (and whatever the load)."""
    ms = status_messages(random.Random(7), 200)
    folder = build_folder(tmp_path / COMMUNITY, ms, cap=9_000, weeks=WEEKS)
    plan = _plan(folder)
    history = MemberHistory(tmp_path / "h.sqlite")
    hydrate = reference_hydrator(history, defer_authors=False)
    for i, w in enumerate(plan):
        if i + 1 < len(plan):
            hydrate.prepare(COMMUNITY, folder.path, {a: folder.entries[a] for a in plan[i + 1].archive_ids}, 1)
            assert hydrate.windows_read_ahead == i + 1
        hydrate(COMMUNITY, folder.path, {a: folder.entries[a] for a in w.archive_ids})
    history.close()
    ref = tmp_path / "ref.sqlite"
    assert not import_folder(folder.path, ref, COMMUNITY, Selection("all"), defer_authors=False,
                             read_ahead=False).failed
    assert rows_of(tmp_path / "h.sqlite") == rows_of(ref) and len(rows_of(ref)) == len(ms)
