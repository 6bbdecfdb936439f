"""The floor of `archivist import` (tests/bench/test_import_bench.py): the durable work an import's first pass must
leave in the history database, done the plainest fast way, with rows that are ready (decoded beforehand, not timed).

`floor(db, like, rows, per_window=True)` writes into a new database `db`, with the importer's pragmas (16 KiB
pages, WAL, synchronous=NORMAL, a 256 MiB cache, a WAL checkpoint every 256 MiB: core.storage.history's
configure + import_mode):
- the table `history_messages` and its two indexes as `like` (a history the importer wrote) has them;
- `rows` (tuples in the table's column order, in the order the importer wrote them), one transaction per window
  (a window: consecutive rows with the same archive ID; the importer commits each window for crash safety), each
  a plain `INSERT` of its rows then the entries `(rowid, hash)` of `history_authors_pending` for them (the
  importer records every signed row there in the same transaction);
- the two indexes made after the rows, in the last window's transaction (`indexes="after"`), or made first,
  before the rows (`indexes="with"`).
`per_window=False` is the floor of earlier runs: every row in one transaction, no pending entries.
Returns the seconds from the first BEGIN to the last COMMIT and the thread's CPU seconds in that time.
The small bookkeeping rows (one per archive) are left out."""
from __future__ import annotations

import itertools
import sqlite3
import time

from core.storage.history import IMPORT_CACHE_KIB, IMPORT_WAL_BYTES, PAGE_SIZE


def floor(db, like, rows: list[tuple], per_window: bool = True, indexes: str = "after") -> tuple[float, float]:
    src = sqlite3.connect(like)
    table, *index = [s for (s,) in src.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'history_messages' "
                                                "AND sql IS NOT NULL ORDER BY type DESC")]      # table first
    src.close()
    assert len(index) == 2
    con = sqlite3.connect(db, isolation_level=None)
    for pragma in (f"page_size={PAGE_SIZE}", "journal_mode=WAL", "synchronous=NORMAL",
                   f"cache_size=-{IMPORT_CACHE_KIB}", f"wal_autocheckpoint={IMPORT_WAL_BYTES // PAGE_SIZE}"):
        con.execute(f"PRAGMA {pragma}")
    con.execute(table)
    con.execute("CREATE TABLE history_authors_pending (rid INTEGER PRIMARY KEY, hash BLOB NOT NULL)")
    insert = f"INSERT INTO history_messages VALUES ({','.join('?' * len(rows[0]))})"
    windows = [list(w) for _, w in itertools.groupby(rows, key=lambda r: r[-1])] if per_window else [rows]
    t, c = time.perf_counter(), time.thread_time()
    for i, window in enumerate(windows):
        con.execute("BEGIN")
        if i == 0 and indexes == "with":
            for statement in index:
                con.execute(statement)
        top = con.execute("SELECT COALESCE(MAX(rowid), 0) FROM history_messages").fetchone()[0]
        con.executemany(insert, window)
        if per_window:
            con.execute("INSERT INTO history_authors_pending SELECT rowid, hash FROM history_messages WHERE rowid > ?",
                        (top,))
        if i == len(windows) - 1 and indexes == "after":
            for statement in index:
                con.execute(statement)
        con.execute("COMMIT")
    took, cpu = time.perf_counter() - t, time.thread_time() - c
    con.close()
    return took, cpu
