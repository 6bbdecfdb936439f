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
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from core.storage.archive_state import (ARCHIVE_TABLES, add_archive_ids, archive_info, imported_archive_ids,
                                        mark_archives, raise_last_archive_end, set_magnetlink)

# the archive-table functions are archive_state's, named here for the history database's callers
__all__ = ["SCHEMA", "COLUMNS", "HistoryRow", "HistoryWriteError", "connect", "import_window", "count",
           "bulk_insert", "messages", "add_archive_ids", "archive_info", "imported_archive_ids", "set_magnetlink"]

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
CREATE INDEX IF NOT EXISTS history_messages_chat ON history_messages (chat_id, clock);
""" + ARCHIVE_TABLES

COLUMNS = ("community_id", "hash", "timestamp", "topic", "sender", "chat_id", "clock", "message_id",
           "message_type", "text", "raw_payload", "archive_id")
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
    con = sqlite3.connect(str(path), isolation_level=None)  # explicit BEGIN/COMMIT below
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(SCHEMA)
    return con


class HistoryWriteError(Exception):
    """The history database could not be written (disk full, I/O error, read-only file). The window's transaction
    was rolled back: nothing of it is in the database, and running the import again continues."""

    code = "history-write-failed"


def _db_file(con: sqlite3.Connection) -> str:
    try:
        return next((r[2] for r in con.execute("PRAGMA database_list") if r[1] == "main"), "") or "history database"
    except sqlite3.Error:
        return "history database"


def import_window(con: sqlite3.Connection, community_id: str, start: int, end: int,
                  rows: Iterable[Sequence], archive_ids: Sequence[str] = ()) -> int:
    """In one transaction: upsert `rows` (tuples in COLUMNS order; a row replaces the one with the same hash),
    mark `archive_ids` imported and move the archive end watermark. Deletes nothing. Returns rows written.
    Raises HistoryWriteError when SQLite cannot write (disk full, I/O error, read-only)."""
    try:
        return _import_window(con, community_id, start, end, rows, archive_ids)
    except sqlite3.OperationalError as e:
        if getattr(e, "sqlite_errorname", "").startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY",
                                                           "SQLITE_CANTOPEN", "SQLITE_BUSY")):
            raise HistoryWriteError(f"cannot write {_db_file(con)}: {e} ({e.sqlite_errorname}); nothing of the "
                                    f"window [{start}, {end}) was written: free disk space or fix the file's "
                                    "permissions, then import again") from None
        raise


def _import_window(con, community_id, start, end, rows, archive_ids) -> int:
    con.execute("BEGIN IMMEDIATE")
    try:
        before = con.total_changes
        con.executemany(_INSERT, rows)
        written = con.total_changes - before
        mark_archives(con, community_id, archive_ids, imported=True)
        raise_last_archive_end(con, community_id, end)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:
                pass            # SQLite rolls back on its own when it cannot; the original error is the one to see
        raise
    return written


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
