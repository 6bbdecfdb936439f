"""`archivist import` of a community folder (core.node.import_cli.import_folder: the member's one importer) as it
runs now, rows first and authors after (the history is visible when every window is written; the signers are
recovered on every core afterwards), beside the same import with every author recovered inside its window's
transaction (defer_authors=False: the importer before issue 17's second pass) and the floor of a plain SQLite bulk
insert of the same rows with the importer's pragmas, in one transaction, measured after each rows-first run: into
the table with its two indexes, and with the two indexes made after the rows (the faster one is the floor). The
history databases must come out identical.

Default: 30,000 real signed Status messages over 2 weeks (15k a window). ARCHIVIST_SLOW=1:
1M (ARCHIVIST_BENCH_IMPORT_MESSAGES overrides)."""
from __future__ import annotations

import os
import sqlite3
import time

from core.archive.build import build_archives
from core.node.import_cli import import_folder
from core.status.traffic import TrafficGenerator
from core.storage.history import IMPORT_CACHE_KIB, IMPORT_WAL_BYTES, PAGE_SIZE
from core.torrent.selection import Selection
from tests.bench.test_node_bench import START, WEEK, _fill_store
from tests.bench.table import record

N = int(os.environ.get("ARCHIVIST_BENCH_IMPORT_MESSAGES",
                       1_000_000 if os.environ.get("ARCHIVIST_SLOW") == "1" else 30_000))


def test_import_rows_first_against_authors_inline_and_the_bulk_insert_floor(tmp_path, capsys):
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
    inline: list[float] = []
    visible: list[float] = []
    whole: list[float] = []
    floors: list[float] = []
    bares: list[float] = []
    afters: list[float] = []
    for run in range(4):                      # alternate, the floor after each pair; the best of two each
        deferred = run % 2 == 1
        t = time.perf_counter()
        shown: list[float] = []

        def progress(done, total):
            if not shown:
                shown.append(time.perf_counter() - t)          # every window written: the history is visible
        rep = import_folder(folder, tmp_path / f"h{run}.sqlite", gen.community_id, Selection("all"),
                            authors_progress=progress, defer_authors=deferred)
        took = time.perf_counter() - t
        assert rep.messages == N and not rep.failed
        if not deferred:
            inline.append(took)
            continue
        visible.append(shown[0])
        whole.append(took)
        # the floor inserts the same rows in the order the importer does (rowid order of the inline import)
        ordered = sqlite3.connect(tmp_path / "h0.sqlite").execute("SELECT * FROM history_messages ORDER BY rowid"
                                                                   ).fetchall()
        floors.append(_bulk_insert(tmp_path / f"floor{run}.sqlite", tmp_path / "h0.sqlite", ordered, "with"))
        afters.append(_bulk_insert(tmp_path / f"after{run}.sqlite", tmp_path / "h0.sqlite", ordered, "after"))
        bares.append(_bulk_insert(tmp_path / f"bare{run}.sqlite", tmp_path / "h0.sqlite", ordered, "none"))
        del ordered
    rows = [sqlite3.connect(tmp_path / f"h{i}.sqlite").execute(
        "SELECT * FROM history_messages ORDER BY hash").fetchall() for i in (0, 1)]
    assert rows[0] == rows[1] and len(rows[0]) == N
    assert sqlite3.connect(tmp_path / "h1.sqlite").execute("SELECT COUNT(*) FROM history_authors_pending"
                                                           ).fetchone()[0] == 0
    t_with, t_after, t_bare = min(floors), min(afters), min(bares)
    t_floor = min(t_with, t_after)            # the faster of the two ways to the same table and indexes
    t_inline, t_visible, t_whole = min(inline), min(visible), min(whole)
    with capsys.disabled():
        print(f"\nIMPORT {N} messages, {weeks} windows, {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})")
        print(f"  authors inline (each window whole): {t_inline:.2f} s = {N / t_inline:,.0f} msg/s")
        print(f"  rows first: history visible after {t_visible:.2f} s = {N / t_visible:,.0f} msg/s "
              f"({t_visible / t_floor:.2f}x the floor)")
        print(f"  rows first: authors done after {t_whole:.2f} s ({t_inline / t_whole:.2f}x faster than inline)")
        print(f"  floor, bulk insert of the same rows in one transaction (best of 2, each after a rows-first run): "
              f"into the table and its two indexes {t_with:.2f} s, the two indexes made after the rows "
              f"{t_after:.2f} s; authors inline / floor = {t_inline / t_floor:.1f}x")
        print(f"  (the same insert into the table without its two indexes: {t_bare:.2f} s)")
        record("import", f"archivist import {N:,} messages, history visible (rows first)", t_visible, "s",
               "bulk insert floor", t_floor, "<= 1.3x")
        record("import", f"archivist import {N:,} messages, authors done", t_whole, "s", "authors inline",
               t_inline)


def _bulk_insert(db, like, rows, indexes: str) -> float:
    """The floor: `rows` into an empty copy of `like`'s history_messages, in one transaction, with the importer's
    pragmas (core.storage.history: configure + import_mode). indexes: "with" (the table and its two indexes, then
    the rows), "after" (the rows, then the two indexes, in the same transaction) or "none" (the table alone)."""
    src = sqlite3.connect(like)
    table, *index = [s for (s,) in src.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'history_messages' "
                                                "AND sql IS NOT NULL ORDER BY type DESC")]      # table first
    src.close()
    assert len(index) == 2
    dst = sqlite3.connect(db, isolation_level=None)
    for pragma in (f"page_size={PAGE_SIZE}", "journal_mode=WAL", "synchronous=NORMAL",
                   f"cache_size=-{IMPORT_CACHE_KIB}", f"wal_autocheckpoint={IMPORT_WAL_BYTES // PAGE_SIZE}"):
        dst.execute(f"PRAGMA {pragma}")
    dst.execute(table)
    t = time.perf_counter()
    dst.execute("BEGIN")
    for statement in index if indexes == "with" else ():
        dst.execute(statement)
    dst.executemany(f"INSERT INTO history_messages VALUES ({','.join('?' * len(rows[0]))})", rows)
    for statement in index if indexes == "after" else ():
        dst.execute(statement)
    dst.execute("COMMIT")
    took = time.perf_counter() - t
    dst.close()
    return took
