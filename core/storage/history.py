"""The member's history database: application messages imported from archives, plus status-go's archive tables.

`history_messages` holds one row per archived WakuMessage (keyed by community and Waku hash): the Waku-level facts
(timestamp in seconds, topic, sender key, raw payload) and, when the payload could be unwrapped
(ProtocolMessage -> ApplicationMetadataMessage -> ChatMessage), the application-level ones (chat ID, clock,
message ID, type, text). The wrapped WakuMessage itself is not kept (WIRE-FORMAT.md section 5).

`community_message_archive_hashes` and `communities_archive_info` keep status-go's names and columns; they and the
statements on them are defined once, in core/storage/archive_state.py (ARCHIVE_TABLES; this module uses them).

`import_window` writes one archive window (all its chunks) in ONE transaction, so an interruption leaves the
window as it was or fully imported, and records the archives as imported in that same transaction. It never
deletes: each archived message replaces the local row with the same hash, and rows no archive holds are kept
(core/history_import.py has the rules and why).

Authors may come second (`pending=` of import_window): a window's rows are written first with everything but the
author (recovering the signer's key is most of an import's CPU), and their rowids and hashes go into
`history_authors_pending` in the same transaction. `fill_authors` later rewrites those rows' opened fields and
removes them from the pending table, again in one transaction per batch, so a crash between or during the two
passes leaves each row either pending (a restart finishes it) or complete, never lost. A rewritten row that the
history search (core/status/history_search.py) has indexed already moves to a new rowid above all others, as an
upsert would, so that its catch-up indexes the author too; the others are updated in place.

While an import writes its windows, `import_mode` trades memory for speed (a larger cache, rarer checkpoints, a
small history's chat index made once at the end); it changes no transaction and nothing a crash could lose.
"""
from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from core.storage.archive_state import (ARCHIVE_TABLES, add_archive_ids, archive_info, imported_archive_ids,
                                        mark_archives, raise_last_archive_end, set_magnetlink)

log = logging.getLogger(__name__)

# the archive-table functions are archive_state's, named here for the history database's callers
__all__ = ["SCHEMA", "PENDING_SCHEMA", "COLUMNS", "OPENED", "HistoryRow", "HistoryWriteError", "connect", "import_window", "count",
           "bulk_insert", "messages", "import_mode", "pending_authors", "pending_author_count", "fill_authors", "has_pending_table", "add_archive_ids", "archive_info", "imported_archive_ids", "set_magnetlink"]

CHAT_INDEX = "CREATE INDEX IF NOT EXISTS history_messages_chat ON history_messages (chat_id, clock);\n"
SCHEMA = """
CREATE TABLE IF NOT EXISTS history_messages (
  community_id TEXT NOT NULL,
  hash BLOB NOT NULL,            -- 32-byte Waku message hash (archive's WakuMessage.hash)
  timestamp INTEGER NOT NULL,    -- Waku timestamp, seconds: what archive windows [from, to) cover
  topic BLOB NOT NULL,           -- 4-byte Status topic
  sender BLOB,                   -- author key from the ApplicationMetadataMessage, else WakuMessage.sig
  chat_id TEXT,                  -- unwrapped ChatMessage.chat_id, if any
  clock INTEGER,                 -- unwrapped ChatMessage.clock (Lamport clock), if any
  message_id TEXT,               -- application message ID, if known
  message_type INTEGER,          -- ApplicationMetadataMessage.type, if known
  text TEXT,                     -- ChatMessage.text, if any
  raw_payload BLOB NOT NULL,     -- the WakuMessage payload as archived (ProtocolMessage bytes)
  archive_id TEXT,               -- the archive it came from
  PRIMARY KEY (community_id, hash)
);
CREATE INDEX IF NOT EXISTS history_messages_range ON history_messages (community_id, timestamp);
""" + CHAT_INDEX + ARCHIVE_TABLES

PENDING_SCHEMA = """
-- rows written before their author was recovered (the second pass of an import fills them in, then deletes them
-- here), by history_messages rowid (appended in order: ~free to write) and hash (a rowid used again by another
-- row is not taken for it). Made by the first import that defers authors, in its transaction: a history
-- database opens unchanged, and one that never deferred has no such table
CREATE TABLE IF NOT EXISTS history_authors_pending (
  rid INTEGER PRIMARY KEY,       -- history_messages.rowid
  hash BLOB NOT NULL
);
"""

COLUMNS = ("community_id", "hash", "timestamp", "topic", "sender", "chat_id", "clock", "message_id",
           "message_type", "text", "raw_payload", "archive_id")
OPENED = COLUMNS[4:10]          # what opening a message gives: sender .. text (what fill_authors rewrites)
_INSERT = (f"INSERT OR REPLACE INTO history_messages ({', '.join(COLUMNS)}) "
           f"VALUES ({', '.join('?' * len(COLUMNS))})")


@dataclass(frozen=True, slots=True)
class HistoryRow:
    community_id: str
    hash: bytes
    timestamp: int
    topic: bytes
    sender: bytes | None
    chat_id: str | None
    clock: int | None
    message_id: str | None
    message_type: int | None
    text: str | None
    raw_payload: bytes
    archive_id: str | None


def connect(path: Path | str) -> sqlite3.Connection:
    return configure(sqlite3.connect(str(path), isolation_level=None))  # explicit BEGIN/COMMIT below


CACHE_KIB = 32 * 1024
"""Page cache of a history connection: a window's rows land in three indexes, one keyed by hash (random order), and
SQLite's default 2 MiB cache makes those inserts read pages back from the OS (~15 % of an import at 200k)."""


IMPORT_CACHE_KIB = 256 * 1024
"""Page cache while an import writes (import_mode): each window's 25k rows land at random in the key index (community
ID + hash), which passes 32 MiB at ~200k rows; with the cache too small every insert reads its index page back and
each window writes it again. At 1M messages the first pass costs a quarter less CPU with the index in the cache
(docs/BENCHMARKS.md). SQLite takes the pages as it needs them; end_import gives them back."""
IMPORT_WAL_BYTES = 256 * 1024 * 1024
"""WAL checkpoint threshold while an import writes (SQLite's default is 1,000 pages, 4-16 MiB): with the default,
every window's commit copies the whole WAL into the database and fsyncs it, and an index page written by several
windows is copied each time. A commit stays as durable as before (WAL, synchronous=NORMAL)."""
PAGE_SIZE = 16_384
"""Page size of a new history database (SQLite's default is 4 KiB; an existing file keeps its own): a window's random
inserts into the key index touch a quarter as many pages, and the first pass at 1M messages costs ~15 % less CPU."""
WAL_LIMIT_BYTES = 64 * 1024 * 1024      # what a checkpointed WAL file is cut back to (journal_size_limit)


def configure(con: sqlite3.Connection) -> sqlite3.Connection:
    """The pragmas and schema of every history connection (this module's and core.storage.member_history's)."""
    con.execute(f"PRAGMA page_size={PAGE_SIZE}")      # only a new (empty) database takes it
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    con.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    con.executescript(SCHEMA)
    return con


REINDEX_BELOW = 100_000
"""An import into a history with fewer rows than this drops the chat index (chat_id, clock) first and makes it again
once its windows are written (import_mode): the index is a third of the first pass's CPU at 1M messages when
clocks arrive out of order, and sorting it once costs a few seconds. Larger histories keep it."""


def import_mode(con: sqlite3.Connection, on: bool) -> None:
    """Pragmas for the duration of an import (a larger page cache, rarer WAL checkpoints: IMPORT_CACHE_KIB,
    IMPORT_WAL_BYTES; a small history's chat index dropped, REINDEX_BELOW), or back to every connection's
    (`on=False`: the chat index made again, the cache shrinks, the next commit checkpoints the WAL as usual).
    Only speed changes: every transaction stays whole, and a crash that leaves the
    index dropped loses nothing (every connection makes it again when it opens: SCHEMA)."""
    if on:
        con.execute(f"PRAGMA cache_size=-{IMPORT_CACHE_KIB}")
        page = con.execute("PRAGMA page_size").fetchone()[0]
        con.execute(f"PRAGMA wal_autocheckpoint={IMPORT_WAL_BYTES // page}")
        small = con.execute(f"SELECT COUNT(*) < {REINDEX_BELOW} FROM (SELECT 1 FROM history_messages "
                            f"LIMIT {REINDEX_BELOW})").fetchone()[0]
        if small:
            _maybe(con, "DROP INDEX IF EXISTS history_messages_chat")
        return
    _maybe(con, CHAT_INDEX)                       # nothing to do when it is there
    con.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    con.execute("PRAGMA wal_autocheckpoint=1000")     # the next commit checkpoints the WAL, as any commit would


class HistoryWriteError(Exception):
    """The history database could not be written (disk full, I/O error, read-only file). The window's transaction
    was rolled back: nothing of it is in the database, and running the import again continues."""

    code = "history-write-failed"


def _db_file(con: sqlite3.Connection) -> str:
    try:
        return next((r[2] for r in con.execute("PRAGMA database_list") if r[1] == "main"), "") or "history database"
    except sqlite3.Error:
        return "history database"


def _maybe(con: sqlite3.Connection, statement: str) -> None:
    """import_mode's index statements: only speed depends on them, so another writer holding the database past the
    busy timeout (or a full disk) leaves the index as it is (the next open makes a missing one: SCHEMA)."""
    try:
        con.execute(statement)
    except sqlite3.OperationalError as e:
        log.info("history import: %s not done (%s); the index is made when the database is next opened",
                 statement.split(" ON ")[0], e)


def import_window(con: sqlite3.Connection, community_id: str, start: int, end: int,
                  rows: Iterable[Sequence], archive_ids: Sequence[str] = (), pending: Iterable[bytes] = ()) -> int:
    """In one transaction: upsert `rows` (tuples in COLUMNS order; a row replaces the one with the same hash),
    record the hashes in `pending` as waiting for their author (fill_authors), mark `archive_ids` imported and move
    the archive end watermark. Deletes nothing. Returns rows written.
    Raises HistoryWriteError when SQLite cannot write (disk full, I/O error, read-only)."""
    if pending and not isinstance(rows, (list, tuple)):
        rows = list(rows)                 # read twice below
    def write() -> int:
        top = con.execute(_TOP).fetchone()[0]
        before = con.total_changes
        con.executemany(_INSERT, rows)
        written = con.total_changes - before
        if want := set(pending):
            con.execute(PENDING_SCHEMA)
            # this transaction's rows have rowids above `top` (SQLite takes max + 1); if it chose others (only
            # once a rowid reached 2^63 - 1), each row is looked up by its key. When every row waits for its
            # author (the usual window: every Status message is signed), SQLite copies them itself. `pending` holds
            # hashes of `rows`: as many distinct ones as rows means every row (no set of the rows' hashes to make)
            if len(want) == len(rows) or len(want) == len({r[1] for r in rows}):
                before = con.total_changes
                con.execute("INSERT OR REPLACE INTO history_authors_pending (rid, hash) "
                            "SELECT rowid, hash FROM history_messages WHERE rowid > ?", (top,))
                new = [None] * (con.total_changes - before)
            else:
                new = [(r, h) for r, h in con.execute("SELECT rowid, hash FROM history_messages WHERE rowid > ?",
                                                      (top,)) if h in want]
                con.executemany(_PENDING, new)
            if len(new) < len(want):
                con.executemany(_PENDING, [(r, h) for h in want for (r,) in con.execute(
                    "SELECT rowid FROM history_messages WHERE community_id = ? AND hash = ?", (community_id, h))])
        mark_archives(con, community_id, archive_ids, imported=True)
        raise_last_archive_end(con, community_id, end)
        return written
    return _transaction(con, write, f"nothing of the window [{start}, {end}) was written")


_TOP = "SELECT COALESCE(MAX(rowid), 0) FROM history_messages"
_PENDING = "INSERT OR REPLACE INTO history_authors_pending (rid, hash) VALUES (?, ?)"
# the opened columns in place, or with a new rowid above every other (as an upsert gives) for a row that the history
# search has indexed already (history_search_state's 'rowid': its watermark), so that its catch-up indexes it again
_REWRITE = (f"UPDATE history_messages SET {', '.join(c + ' = ?' for c in OPENED)} "
            "WHERE rowid = ? AND hash = ? AND community_id = ?")
_REWRITE_MOVED = _REWRITE.replace(" WHERE", ", rowid = ? WHERE")
# in place, the usual case first: only the author was missing, so only `sender` is written (no index entry moves);
# then whatever still differs (a bad signature makes the whole row raw) is written whole
_SENDER_ONLY = ("UPDATE history_messages SET sender = ? WHERE rowid = ? AND hash = ? AND community_id = ? AND "
                + " AND ".join(f"{c} IS ?" for c in OPENED[1:]))
_REWRITE_REST = _REWRITE + " AND NOT (" + " AND ".join(f"{c} IS ?" for c in OPENED) + ")"
# a pending entry and its row (none: the rowid was used again by another row, or there is no row)
_PENDING_ROWS = ("FROM history_authors_pending p LEFT JOIN history_messages m ON m.rowid = p.rid AND m.hash = p.hash "
                 "WHERE (m.community_id = ? OR m.rowid IS NULL)")


def pending_authors(con: sqlite3.Connection, community_id: str, limit: int, after: int = 0
                    ) -> list[tuple[int, bytes, bytes | None, bytes | None]]:
    """Up to `limit` rows waiting for their author, in rowid order after `after`: (rid, hash, raw_payload,
    sender). raw_payload is None for an entry whose row is gone (fill_authors only clears it)."""
    if not has_pending_table(con):
        return []
    return con.execute(f"SELECT p.rid, p.hash, m.raw_payload, m.sender {_PENDING_ROWS} AND p.rid > ? "
                       "ORDER BY p.rid LIMIT ?", (community_id, after, limit)).fetchall()


def has_pending_table(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history_authors_pending'"
                       ).fetchone() is not None


def pending_author_count(con: sqlite3.Connection, community_id: str) -> int:
    """How many entries pending_authors would give for `community_id` (each entry whose row is this community's, or
    whose row is gone). When no row of another community is in the history (the usual member history), that is
    every entry, and counting the pending table alone spares reading a row per entry (0.1-0.3 s at 200k)."""
    if not has_pending_table(con):
        return 0
    if not _other_communities(con, community_id):
        return con.execute("SELECT COUNT(*) FROM history_authors_pending").fetchone()[0]
    return con.execute(f"SELECT COUNT(*) {_PENDING_ROWS}", (community_id,)).fetchone()[0]


def _other_communities(con: sqlite3.Connection, community_id: str) -> bool:
    """Whether any history row belongs to another community (two index look-ups: community_id leads the key)."""
    return any(con.execute(f"SELECT 1 FROM history_messages WHERE community_id {op} ? LIMIT 1", (community_id,)
                           ).fetchone() for op in ("<", ">"))


def fill_authors(con: sqlite3.Connection, community_id: str, opened: Sequence[tuple]) -> int:
    """In one transaction: each (rid, hash, sender, chat_id, clock, message_id, message_type, text) rewrites the
    OPENED columns of its row (the rest as stored) and leaves the pending table. A row the history search indexed
    already moves to a new rowid (its catch-up then indexes the author too); the others are rewritten in place,
    most of them only their sender (2-4x cheaper). Returns rows rewritten."""
    def write() -> int:
        top, indexed = con.execute(_TOP).fetchone()[0], _search_watermark(con)
        before = con.total_changes
        in_place = [o for o in opened if o[0] > indexed]
        con.executemany(_SENDER_ONLY, ((o[2], o[0], o[1], community_id, *o[3:]) for o in in_place))
        con.executemany(_REWRITE_REST, ((*o[2:], o[0], o[1], community_id, *o[2:]) for o in in_place))
        con.executemany(_REWRITE_MOVED, (tuple(o[2:]) + (top + 1 + i, o[0], o[1], community_id)
                                         for i, o in enumerate(o for o in opened if o[0] <= indexed)))
        written = con.total_changes - before       # each row once: the second statement skips what the first did
        con.executemany("DELETE FROM history_authors_pending WHERE rid = ?", ((o[0],) for o in opened))
        return written
    return _transaction(con, write, "no author of this batch was written")


def _search_watermark(con: sqlite3.Connection) -> int:
    """The highest history_messages rowid that core/status/history_search.py has indexed (0: no search index)."""
    try:
        row = con.execute("SELECT value FROM history_search_state WHERE name = 'rowid'").fetchone()
    except sqlite3.OperationalError:          # no such table: the search never ran on this database
        return 0
    return row[0] if row else 0


def _transaction(con: sqlite3.Connection, write, lost: str) -> int:
    """write() in one IMMEDIATE transaction; SQLite's write failures become HistoryWriteError (rolled back)."""
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            n = write()
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass        # SQLite rolls back on its own when it cannot; the original error is the one to see
            raise
        return n
    except sqlite3.OperationalError as e:
        if getattr(e, "sqlite_errorname", "").startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY",
                                                           "SQLITE_CANTOPEN", "SQLITE_BUSY")):
            raise HistoryWriteError(f"cannot write {_db_file(con)}: {e} ({e.sqlite_errorname}); {lost}: free disk "
                                    "space or fix the file's permissions, then import again") from None
        raise


def count(con: sqlite3.Connection, community_id: str) -> int:
    return con.execute("SELECT COUNT(*) FROM history_messages WHERE community_id = ?", (community_id,)).fetchone()[0]


def bulk_insert(con: sqlite3.Connection, rows: Iterable[Sequence]) -> int:
    """Plain insert of rows in one transaction (the benchmark's reference)."""
    con.execute("BEGIN")
    before = con.total_changes
    con.executemany(_INSERT, rows)
    con.execute("COMMIT")
    return con.total_changes - before


def messages(con: sqlite3.Connection, community_id: str) -> list[tuple]:
    """All of a community's rows in (timestamp, hash) order (tests and inspection)."""
    return con.execute(f"SELECT {', '.join(COLUMNS)} FROM history_messages WHERE community_id = ? "
                       f"ORDER BY timestamp, hash", (community_id,)).fetchall()
