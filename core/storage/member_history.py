"""The member's history database: application messages imported from archives (not the wrapped Waku messages).

Canonical replacement (spec, not status-go): importing an archive replaces ALL of the community's messages whose
timestamp lies in the archive's [from, to), in one transaction, and touches nothing outside that range.
"""
from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

SCHEMA = """
CREATE TABLE IF NOT EXISTS history_messages (
  community_id TEXT NOT NULL,
  id TEXT NOT NULL,                 -- 0x + Waku message hash
  chat_id TEXT NOT NULL,
  topic TEXT NOT NULL,              -- 0x + 4-byte Status topic
  timestamp INT NOT NULL,           -- Waku timestamp, seconds
  clock INT NOT NULL DEFAULT 0,
  author TEXT NOT NULL DEFAULT '',  -- 0x + 65-byte key that signed the application message
  text TEXT NOT NULL DEFAULT '',
  content_type INT NOT NULL DEFAULT 0,
  app_type INT NOT NULL DEFAULT 0,  -- ApplicationMetadataMessage type (1 = chat message)
  source TEXT NOT NULL DEFAULT 'archive',
  PRIMARY KEY (community_id, id)
);
CREATE INDEX IF NOT EXISTS history_by_time ON history_messages (community_id, timestamp);
"""


@dataclass(frozen=True, slots=True)
class HistoryRow:
    id: str
    chat_id: str
    topic: str
    timestamp: int
    clock: int = 0
    author: str = ""
    text: str = ""
    content_type: int = 0
    app_type: int = 0
    source: str = "archive"


class MemberHistory:
    def __init__(self, path: Path | str):
        self._con = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._con.close()

    def replace_range(self, cid: str, start: int, end: int, rows: Iterable[HistoryRow]) -> int:
        """Atomically make [start, end) of community `cid` exactly `rows`. Returns rows written."""
        rows = list(rows)
        with self._lock:
            cur = self._con.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                cur.execute("DELETE FROM history_messages WHERE community_id=? AND timestamp >= ? AND timestamp < ?",
                            (cid, start, end))
                cur.executemany("INSERT OR REPLACE INTO history_messages VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                [(cid, r.id, r.chat_id, r.topic, r.timestamp, r.clock, r.author, r.text,
                                  r.content_type, r.app_type, r.source) for r in rows])
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return len(rows)

    def add_live(self, cid: str, rows: Iterable[HistoryRow]) -> None:
        with self._lock:
            self._con.executemany("INSERT OR IGNORE INTO history_messages VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                  [(cid, r.id, r.chat_id, r.topic, r.timestamp, r.clock, r.author, r.text,
                                    r.content_type, r.app_type, "live") for r in rows])

    def messages(self, cid: str, start: int | None = None, end: int | None = None, chat_id: str | None = None,
                 limit: int = 1000, offset: int = 0) -> list[dict]:
        sql = "SELECT id, chat_id, topic, timestamp, clock, author, text, content_type, app_type, source " \
              "FROM history_messages WHERE community_id=?"
        args: list = [cid]
        if start is not None:
            sql += " AND timestamp >= ?"
            args.append(start)
        if end is not None:
            sql += " AND timestamp < ?"
            args.append(end)
        if chat_id is not None:
            sql += " AND chat_id = ?"
            args.append(chat_id)
        sql += " ORDER BY timestamp, id LIMIT ? OFFSET ?"
        args += [limit, offset]
        with self._lock:
            cols = ("id", "chat_id", "topic", "timestamp", "clock", "author", "text", "content_type", "app_type",
                    "source")
            return [dict(zip(cols, r)) for r in self._con.execute(sql, args)]

    def count(self, cid: str) -> int:
        with self._lock:
            return self._con.execute("SELECT COUNT(*) FROM history_messages WHERE community_id=?", (cid,)).fetchone()[0]
