"""`archivist import` of a community folder (core.node.import_cli.import_folder: the member's one importer), with
the rows made in this process (RowPool of 1: the reference) and on every core (the default), beside the floor of a
plain SQLite bulk insert of the same rows, all in one run. The history databases must come out identical.

Default: 30,000 real signed Status messages over 2 weeks (15k a window). ARCHIVIST_SLOW=1:
1M (ARCHIVIST_BENCH_IMPORT_MESSAGES overrides)."""
from __future__ import annotations

import os
import sqlite3
import time

import core.history_import as HI
from core.archive.build import build_archives
from core.node.import_cli import import_folder
from core.status.traffic import TrafficGenerator
from core.torrent.selection import Selection
from tests.bench.test_node_bench import START, WEEK, _fill_store
from tests.bench.table import record

N = int(os.environ.get("ARCHIVIST_BENCH_IMPORT_MESSAGES",
                       1_000_000 if os.environ.get("ARCHIVIST_SLOW") == "1" else 30_000))


def test_import_on_every_core_against_one_and_the_bulk_insert_floor(tmp_path, capsys):
    weeks = max(2, N // 25_000)
    gen = TrafficGenerator(seed=3, channels=3, authors=20)
    store = tmp_path / "messages.sqlite"
    _fill_store(store, gen, N, weeks)
    con = sqlite3.connect(store)
    topics = [bytes.fromhex(t[2:]) for (t,) in con.execute("SELECT DISTINCT topic FROM waku_messages")]
    con.close()
    build_archives(store, gen.community_id, topics, tmp_path / "d", tmp_path / "t", end=START + (weeks + 1) * WEEK,
                   now=lambda: START + (weeks + 2) * WEEK)
    folder = tmp_path / "d" / gen.community_id
    cores = HI._ROW_POOL.workers
    times: dict[int, float] = {}
    try:
        for run, workers in enumerate([1, cores, 1, cores]):        # alternate; the best of two each
            HI._ROW_POOL.workers = workers
            t = time.perf_counter()
            rep = import_folder(folder, tmp_path / f"h{run}.sqlite", gen.community_id, Selection("all"))
            times[workers] = min(times.get(workers, 1e9), time.perf_counter() - t)
            assert rep.messages == N and not rep.failed
    finally:
        HI._ROW_POOL.workers = cores
    rows = [sqlite3.connect(tmp_path / f"h{i}.sqlite").execute(
        "SELECT * FROM history_messages ORDER BY hash").fetchall() for i in (0, 1)]
    assert rows[0] == rows[1] and len(rows[0]) == N
    # floor: the same rows into an empty copy of the schema, one transaction, nothing else
    floor_db = tmp_path / "floor.sqlite"
    src = sqlite3.connect(tmp_path / "h0.sqlite")
    schema = [s for (s,) in src.execute("SELECT sql FROM sqlite_master WHERE name = 'history_messages'")]
    dst = sqlite3.connect(floor_db, isolation_level=None)
    dst.execute("PRAGMA journal_mode=WAL")
    dst.execute(schema[0])
    t = time.perf_counter()
    dst.execute("BEGIN")
    dst.executemany(f"INSERT INTO history_messages VALUES ({','.join('?' * len(rows[0][0]))})", rows[0])
    dst.execute("COMMIT")
    t_floor = time.perf_counter() - t
    with capsys.disabled():
        print(f"\nIMPORT {N} messages, {weeks} windows, {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})")
        print(f"  rows in process (reference): {times[1]:.2f} s = {N / times[1]:,.0f} msg/s")
        if cores > 1:
            print(f"  rows on {cores} workers:        {times[cores]:.2f} s = {N / times[cores]:,.0f} msg/s "
                  f"({times[1] / times[cores]:.2f}x the reference)")
        record("import", f"archivist import {N:,} messages, rows in process", times[1], "s", "bulk insert floor",
               t_floor, "<= 1.3x")
        if cores > 1:
            record("import", f"archivist import {N:,} messages, rows on {cores} workers", times[cores], "s",
                   "rows in process", times[1])
        print(f"  floor, bulk insert of the same rows: {t_floor:.2f} s; import / floor = "
              f"{min(times.values()) / t_floor:.1f}x")
