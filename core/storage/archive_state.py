"""Archive bookkeeping under status-go's table names, plus Archivist's own counters.

status-go: `communities_settings`, `communities_archive_info`, `community_message_archive_hashes`.
Ours: `archivist_link_rejections` (why links were ignored, counted), `archivist_pending_links` (an accepted link
whose download/import has not finished: resumed at startup), `archivist_settings` (global switches).
"""
from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS communities_settings (
  community_id TEXT PRIMARY KEY ON CONFLICT REPLACE,
  message_archive_seeding_enabled BOOLEAN DEFAULT FALSE,
  message_archive_fetching_enabled BOOLEAN DEFAULT FALSE,
  history_archive_support_enabled BOOLEAN DEFAULT FALSE
);
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


class ArchiveStateDB:
    """One connection, one writer lock (SQLite writes go through one writer per database)."""

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

    # -- archive info --------------------------------------------------------------------------------------
    def archive_info(self, cid: str) -> ArchiveInfo:
        rows = self._exec("SELECT magnetlink_clock, last_message_archive_end_date, last_magnetlink_uri "
                          "FROM communities_archive_info WHERE community_id=?", (cid,))
        return ArchiveInfo(*rows[0]) if rows else ArchiveInfo()

    def _update_info(self, cid: str, **kw) -> None:
        cur = self.archive_info(cid).__dict__ | kw
        self._exec("INSERT INTO communities_archive_info VALUES (?,?,?,?)",
                   (cid, cur["magnetlink_clock"], cur["last_message_archive_end_date"], cur["last_magnetlink_uri"]))

    def set_magnetlink_clock(self, cid: str, clock: int) -> None:
        self._update_info(cid, magnetlink_clock=clock)

    def set_last_magnetlink(self, cid: str, link: str) -> None:
        self._update_info(cid, last_magnetlink_uri=link)

    def set_last_archive_end(self, cid: str, end: int) -> None:
        self._update_info(cid, last_message_archive_end_date=end)

    # -- archive hashes ------------------------------------------------------------------------------------
    def archive_ids(self, cid: str, imported: bool | None = None) -> set[str]:
        if imported is None:
            rows = self._exec("SELECT hash FROM community_message_archive_hashes WHERE community_id=?", (cid,))
        else:
            rows = self._exec("SELECT hash FROM community_message_archive_hashes WHERE community_id=? AND imported=?",
                              (cid, imported))
        return {r[0] for r in rows}

    def mark_archive(self, cid: str, archive_id: str, imported: bool) -> None:
        self._exec("INSERT INTO community_message_archive_hashes VALUES (?,?,?)", (cid, archive_id, imported))

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
