"""Archive bookkeeping under status-go's table names, plus Archivist's own counters.

status-go: `communities_settings`, `communities_archive_info`, `community_message_archive_hashes`.
Ours: `archivist_link_rejections` (why links were ignored, counted), `archivist_pending_links` (an accepted link
whose download/import has not finished: resumed at startup), `archivist_settings` (global switches).

This module is the one definition of the two archive bookkeeping tables (`ARCHIVE_TABLES`) and of every statement
that reads or writes them (the functions below take a connection). Two database files carry them: a node's
`state.sqlite` (`ArchiveStateDB`: the control node's last archive end, the member's accepted link, clock and
archive IDs) and a member's `history.sqlite` (`core.storage.history`: `import_window` records the archives it
imported in the same transaction as their rows, which `archivist import` and the Spark hydrate job read back).
They used to be defined in both modules and had drifted: history.sqlite's `hash` key has no `ON CONFLICT REPLACE`.
Databases written by that version keep their tables (CREATE TABLE IF NOT EXISTS never alters or drops a table),
so every statement here names its conflict rule itself and behaves the same on either layout; no row is dropped.
"""
from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

ARCHIVE_TABLES = """
CREATE TABLE IF NOT EXISTS communities_archive_info (
  community_id TEXT PRIMARY KEY ON CONFLICT REPLACE,
  magnetlink_clock INT NOT NULL DEFAULT 0,
  last_message_archive_end_date INT NOT NULL DEFAULT 0,
  last_magnetlink_uri TEXT
);
CREATE TABLE IF NOT EXISTS community_message_archive_hashes (
  community_id TEXT NOT NULL,
  hash TEXT PRIMARY KEY ON CONFLICT REPLACE,
  imported BOOL DEFAULT FALSE
);
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS communities_settings (
  community_id TEXT PRIMARY KEY ON CONFLICT REPLACE,
  message_archive_seeding_enabled BOOLEAN DEFAULT FALSE,
  message_archive_fetching_enabled BOOLEAN DEFAULT FALSE,
  history_archive_support_enabled BOOLEAN DEFAULT FALSE
);
""" + ARCHIVE_TABLES + """
CREATE TABLE IF NOT EXISTS archivist_link_rejections (
  community_id TEXT NOT NULL, reason TEXT NOT NULL, count INT NOT NULL DEFAULT 0,
  PRIMARY KEY (community_id, reason)
);
CREATE TABLE IF NOT EXISTS archivist_pending_links (
  community_id TEXT PRIMARY KEY, link TEXT NOT NULL, clock INT NOT NULL, received_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS archivist_settings (key TEXT PRIMARY KEY, value TEXT);
"""


@dataclass(frozen=True)
class ArchiveInfo:
    magnetlink_clock: int = 0
    last_message_archive_end_date: int = 0
    last_magnetlink_uri: str | None = None


# -- the archive tables, on any connection that has them -----------------------------------------------------
def archive_info(con: sqlite3.Connection, cid: str) -> ArchiveInfo:
    """The community's row, or the columns' defaults when there is none."""
    row = con.execute("SELECT magnetlink_clock, last_message_archive_end_date, last_magnetlink_uri "
                      "FROM communities_archive_info WHERE community_id = ?", (cid,)).fetchone()
    return ArchiveInfo(*row) if row else ArchiveInfo()


def _set_info(con: sqlite3.Connection, cid: str, column: str, value, keep_max: bool = False) -> None:
    new = f"MAX({column}, excluded.{column})" if keep_max else f"excluded.{column}"
    con.execute(f"INSERT INTO communities_archive_info (community_id, {column}) VALUES (?, ?) "
                f"ON CONFLICT(community_id) DO UPDATE SET {column} = {new}", (cid, value))


def set_magnetlink_clock(con: sqlite3.Connection, cid: str, clock: int) -> None:
    _set_info(con, cid, "magnetlink_clock", clock)


def set_last_magnetlink(con: sqlite3.Connection, cid: str, uri: str) -> None:
    _set_info(con, cid, "last_magnetlink_uri", uri)


def set_magnetlink(con: sqlite3.Connection, cid: str, clock: int, uri: str) -> None:
    """Clock and link together, in one statement."""
    con.execute("INSERT INTO communities_archive_info (community_id, magnetlink_clock, last_magnetlink_uri) "
                "VALUES (?, ?, ?) ON CONFLICT(community_id) DO UPDATE SET magnetlink_clock = excluded.magnetlink_clock,"
                " last_magnetlink_uri = excluded.last_magnetlink_uri", (cid, clock, uri))


def set_last_archive_end(con: sqlite3.Connection, cid: str, end: int) -> None:
    """The control node's watermark: the end of its last archive, as built."""
    _set_info(con, cid, "last_message_archive_end_date", end)


def raise_last_archive_end(con: sqlite3.Connection, cid: str, end: int) -> None:
    """The member's watermark after an import: it never goes back (an older window imported later keeps it)."""
    _set_info(con, cid, "last_message_archive_end_date", end, keep_max=True)


def archive_ids(con: sqlite3.Connection, cid: str, imported: bool | None = None) -> set[str]:
    """Archive IDs known for the community; only the imported ones (True) or only the others (False)."""
    sql = "SELECT hash FROM community_message_archive_hashes WHERE community_id = ?"
    if imported is not None:
        sql += " AND COALESCE(imported, 0)" if imported else " AND NOT COALESCE(imported, 0)"
    return {r[0] for r in con.execute(sql, (cid,))}


def imported_archive_ids(con: sqlite3.Connection, cid: str) -> set[str]:
    return archive_ids(con, cid, imported=True)


def mark_archives(con: sqlite3.Connection, cid: str, ids: Iterable[str], imported: bool) -> None:
    """Set the imported flag of these archives (a row per archive ID, replaced)."""
    con.executemany("INSERT OR REPLACE INTO community_message_archive_hashes (community_id, hash, imported) "
                    "VALUES (?, ?, ?)", [(cid, a, int(imported)) for a in ids])


def add_archive_ids(con: sqlite3.Connection, cid: str, ids: Iterable[str]) -> None:
    """Record archive IDs seen in an index (not imported yet), keeping the imported flag of known ones."""
    con.executemany("INSERT OR IGNORE INTO community_message_archive_hashes (community_id, hash, imported) "
                    "VALUES (?, ?, 0)", [(cid, a) for a in ids])


class ArchiveStateDB:
    """A node's state.sqlite: one connection, one writer lock (SQLite writes go through one writer per database)."""

    def __init__(self, path: Path | str):
        self.path = str(path)
        self._con = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.executescript(SCHEMA)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def _exec(self, sql: str, args=()) -> list[tuple]:
        with self._lock:
            return self._con.execute(sql, args).fetchall()

    def _with(self, fn, *args):
        with self._lock:
            return fn(self._con, *args)

    # -- settings ------------------------------------------------------------------------------------------
    def global_archive_support(self) -> bool:
        rows = self._exec("SELECT value FROM archivist_settings WHERE key='archive_protocol_enabled'")
        return rows[0][0] == "1" if rows else True

    def set_global_archive_support(self, on: bool) -> None:
        self._exec("INSERT OR REPLACE INTO archivist_settings VALUES ('archive_protocol_enabled', ?)",
                   ("1" if on else "0",))

    def community_support(self, cid: str) -> bool | None:
        rows = self._exec("SELECT history_archive_support_enabled FROM communities_settings WHERE community_id=?",
                          (cid,))
        return bool(rows[0][0]) if rows else None

    def set_community_support(self, cid: str, on: bool) -> None:
        self._exec("INSERT INTO communities_settings VALUES (?,?,?,?)", (cid, on, on, on))

    # -- archive info and archive IDs (the module functions above) ---------------------------------------
    def archive_info(self, cid: str) -> ArchiveInfo:
        return self._with(archive_info, cid)

    def set_magnetlink_clock(self, cid: str, clock: int) -> None:
        self._with(set_magnetlink_clock, cid, clock)

    def set_last_magnetlink(self, cid: str, link: str) -> None:
        self._with(set_last_magnetlink, cid, link)

    def set_last_archive_end(self, cid: str, end: int) -> None:
        self._with(set_last_archive_end, cid, end)

    def archive_ids(self, cid: str, imported: bool | None = None) -> set[str]:
        return self._with(archive_ids, cid, imported)

    def mark_archive(self, cid: str, archive_id: str, imported: bool) -> None:
        self._with(mark_archives, cid, [archive_id], imported)

    # -- links -------------------------------------------------------------------------------------------
    def count_rejection(self, cid: str, reason: str) -> None:
        self._exec("INSERT INTO archivist_link_rejections VALUES (?,?,1) "
                   "ON CONFLICT(community_id, reason) DO UPDATE SET count = count + 1", (cid, reason))

    def rejections(self, cid: str) -> dict[str, int]:
        return dict(self._exec("SELECT reason, count FROM archivist_link_rejections WHERE community_id=?", (cid,)))

    def set_pending_link(self, cid: str, link: str, clock: int, at: float) -> None:
        self._exec("INSERT OR REPLACE INTO archivist_pending_links VALUES (?,?,?,?)", (cid, link, clock, at))

    def pending_link(self, cid: str) -> tuple[str, int, float] | None:
        rows = self._exec("SELECT link, clock, received_at FROM archivist_pending_links WHERE community_id=?", (cid,))
        return rows[0] if rows else None

    def clear_pending_link(self, cid: str) -> None:
        self._exec("DELETE FROM archivist_pending_links WHERE community_id=?", (cid,))
