"""`archivist import` of a community folder (core.node.import_cli.import_folder: the member's one importer) as it
runs now, rows first and authors after (the history is visible when every window is written; the signers are
recovered on every core afterwards), beside the same import with every author recovered inside its window's
transaction (defer_authors=False: the importer before issue 17's second pass) and the floor (tests/bench/
floor_import.py: the same rows, ready, written the plainest fast way with the same durable work: one transaction
per window with its pending entries, the two indexes made after the rows or before them, the faster of the two),
measured after each rows-first run. Also the CPU of each (the import's: its process and its RowPool processes, up
to the history being visible), and the floor of earlier runs (one transaction, no pending entries). Each import
starts with no worker process running, as a fresh `archivist import` does. The history databases must come out
identical.

Default (`make test`: only that the bench runs and its checks hold): 10,000 real signed Status messages over 2 weeks
(5k a window; 30,000 until 2026-11-27), 1,000 of them generated (signing is the fill's cost) and replayed, and one
round: one import each way and the floor once (two rounds, the best of two each, until 2026-11-27).
ARCHIVIST_SLOW=1: 1M (ARCHIVIST_BENCH_IMPORT_MESSAGES overrides), 5,000 generated, two rounds."""
from __future__ import annotations

import multiprocessing.forkserver
import os
import sqlite3
import time

from core.archive.build import build_archives
from core.node.import_cli import import_folder
from core.history_import import shared_pool
from core.status.traffic import TrafficGenerator
from core.torrent.selection import Selection
from tests.bench.floor_import import floor
from tests.bench.table import record
from tests.bench.test_node_bench import START, WEEK, _fill_store

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
N = int(os.environ.get("ARCHIVIST_BENCH_IMPORT_MESSAGES", 1_000_000 if SLOW else 10_000))
ROUNDS = 2 if SLOW else 1            # each round: an import with authors inline, one rows first, the floor after it
DISTINCT = 5_000 if SLOW else 1_000  # messages generated (signed) for the store; the rest are replays of them


def test_import_rows_first_against_authors_inline_and_the_bulk_insert_floor(tmp_path, capsys):
    weeks = max(2, N // 25_000)
    gen = TrafficGenerator(seed=3, channels=3, authors=20)
    store = tmp_path / "messages.sqlite"
    _fill_store(store, gen, N, weeks, DISTINCT)
    con = sqlite3.connect(store)
    topics = [bytes.fromhex(t[2:]) for (t,) in con.execute("SELECT DISTINCT topic FROM waku_messages")]
    con.close()
    build_archives(store, gen.community_id, topics, tmp_path / "d", tmp_path / "t", end=START + (weeks + 1) * WEEK,
                   now=lambda: START + (weeks + 2) * WEEK)
    folder = tmp_path / "d" / gen.community_id
    inline: list[float] = []
    visible: list[float] = []
    whole: list[float] = []
    cpus: list[float] = []
    ahead: list[bool] = []
    floors: dict[str, list[tuple[float, float]]] = {"after": [], "with": [], "one": []}
    for run in range(2 * ROUNDS):             # alternate, the floor after each pair; the best of ROUNDS each
        deferred = run % 2 == 1
        _cold()
        t, c = time.perf_counter(), time.process_time()
        shown: list[float] = []

        def progress(done, total):
            if not shown:                                      # every window written: the history is visible
                shown.extend((time.perf_counter() - t, time.process_time() - c + _pool_cpu(), shared_pool().running))
        rep = import_folder(folder, tmp_path / f"h{run}.sqlite", gen.community_id, Selection("all"),
                            authors_progress=progress, defer_authors=deferred)
        took = time.perf_counter() - t
        assert rep.messages == N and not rep.failed
        if not deferred:
            inline.append(took)
            continue
        visible.append(shown[0])
        cpus.append(shown[1])
        whole.append(took)
        ahead.append(shown[2])          # whether the windows were decoded in a worker (read_ahead_pays) or in turn
        # the floor writes the rows the rows-first import wrote, in its order (rowid), before any author was
        # filled in: the inline import's rows (same length; the authors pass rewrites only `sender`)
        ordered = sqlite3.connect(tmp_path / "h0.sqlite").execute("SELECT * FROM history_messages ORDER BY rowid"
                                                                   ).fetchall()
        for name, per_window, indexes in (("after", True, "after"), ("with", True, "with"), ("one", False, "after")):
            floors[name].append(floor(tmp_path / f"floor{run}{name}.sqlite", tmp_path / "h0.sqlite", ordered,
                                      per_window, indexes))
            os.unlink(tmp_path / f"floor{run}{name}.sqlite")
        del ordered
    _cold()
    rows = [sqlite3.connect(tmp_path / f"h{i}.sqlite").execute(
        "SELECT * FROM history_messages ORDER BY hash").fetchall() for i in (0, 1)]
    assert rows[0] == rows[1] and len(rows[0]) == N
    assert sqlite3.connect(tmp_path / "h1.sqlite").execute("SELECT COUNT(*) FROM history_authors_pending"
                                                           ).fetchone()[0] == 0
    best = {name: min(runs) for name, runs in floors.items()}            # (seconds, CPU) of the faster run
    t_floor = min(best["after"], best["with"])[0]             # the faster of the two ways to the same database
    c_floor = min(c for name in ("after", "with") for _, c in floors[name])
    t_inline, t_visible, t_whole, c_visible = min(inline), min(visible), min(whole), min(cpus)
    with capsys.disabled():
        print(f"\nIMPORT {N} messages, {weeks} windows, {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f}; "
              f"next window decoded in a worker while one is written, in the rows-first run(s): {ahead})")
        print(f"  authors inline (each window whole): {t_inline:.2f} s = {N / t_inline:,.0f} msg/s")
        print(f"  rows first: history visible after {t_visible:.2f} s = {N / t_visible:,.0f} msg/s "
              f"({t_visible / t_floor:.2f}x the floor); CPU until then, with its worker processes, {c_visible:.2f} s "
              f"({c_visible / c_floor:.2f}x the floor's)")
        print(f"  rows first: authors done after {t_whole:.2f} s ({t_inline / t_whole:.2f}x faster than inline)")
        print(f"  floor (floor_import.py, best of {ROUNDS}, each after a rows-first run): one transaction per window "
              f"with its pending entries, the two indexes after the rows {best['after'][0]:.2f} s "
              f"(CPU {best['after'][1]:.2f}), before them {best['with'][0]:.2f} s (CPU {best['with'][1]:.2f}); "
              f"authors inline / floor = {t_inline / t_floor:.1f}x")
        print(f"  (the floor of earlier runs, every row in one transaction, no pending entries: {best['one'][0]:.2f} s, "
              f"CPU {best['one'][1]:.2f}; visible / that = {t_visible / best['one'][0]:.2f}x)")
        record("import", f"archivist import {N:,} messages, history visible (rows first)", t_visible, "s",
               "bulk insert floor", t_floor, "<= 1.3x")
        record("import", f"archivist import {N:,} messages, CPU until visible", c_visible, "s",
               "bulk insert floor's CPU", c_floor)
        record("import", f"archivist import {N:,} messages, authors done", t_whole, "s", "authors inline",
               t_inline)


def _cold() -> None:
    """No worker process left from the run before: each import starts its RowPool (and the forkserver that forks
    its workers) as a fresh `archivist import` process does."""
    shared_pool().shutdown()
    multiprocessing.forkserver._forkserver._stop()


def _pool_cpu() -> float:
    """CPU seconds of the RowPool's worker processes and of the forkserver that forked them (their own, from
    /proc; all started by this run, see _cold)."""
    pool = shared_pool()._pool
    pids = list(pool._processes) if pool is not None else []
    server = multiprocessing.forkserver._forkserver._forkserver_pid
    total = 0
    for pid in pids + ([server] if server else []):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])          # utime, stime
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")

