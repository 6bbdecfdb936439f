"""One SQLite message store for both store protocol versions, with a time-based retention policy.

Rows are keyed by the deterministic message hash (v3 cursor); the v2-beta4 digest is kept alongside for its Index
cursor. Indexes serve topic+time queries in (timestamp, hash) and (timestamp, digest) order. The clock is
injectable (Unix ns) so retention and the future-timestamp limit are tested without waiting. Thread-safe
through one lock.

A message dated more than `max_future_ns` ahead of the clock is never stored: it would sit at the head of every
"latest" query (nwaku refuses more than 20 s of drift).
"""
from __future__ import annotations

import collections
import functools
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from core.waku.message import DEFAULT_MAX_FUTURE_S, NS, InvalidMessage, WakuMessage, check_timestamp, \
    decode_message, encode_message, v2_digest

log = logging.getLogger(__name__)

DAY_NS = 86_400 * 10**9
DEFAULT_RETENTION_S = 30 * 86_400        # how long a store node keeps messages (nwaku's and status-go's default)
DEFAULT_RETENTION_NS = DEFAULT_RETENTION_S * 10**9

_SCHEMA = """
CREATE TABLE IF NOT EXISTS waku_store (
    hash BLOB PRIMARY KEY,
    pubsub_topic TEXT NOT NULL,
    content_topic TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    digest BLOB NOT NULL,
    stored_at INTEGER NOT NULL,
    message BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS waku_store_ct_time ON waku_store (content_topic, timestamp, hash);
CREATE INDEX IF NOT EXISTS waku_store_ps_time ON waku_store (pubsub_topic, timestamp, hash);
CREATE INDEX IF NOT EXISTS waku_store_time ON waku_store (timestamp, hash);
CREATE INDEX IF NOT EXISTS waku_store_time_digest ON waku_store (timestamp, digest);
CREATE INDEX IF NOT EXISTS waku_store_stored_at ON waku_store (stored_at);
"""


@dataclass(frozen=True)
class StoredMessage:
    hash: bytes
    pubsub_topic: str
    message: WakuMessage
    digest: bytes
    stored_at: int

    @property
    def timestamp(self) -> int:
        return self.message.timestamp or 0


@dataclass(frozen=True)
class Filter:
    """Selection shared by both protocol versions. Times are inclusive, in Unix ns."""
    pubsub_topic: str | None = None
    content_topics: Sequence[str] = ()
    start: int | None = None
    end: int | None = None
    hashes: Sequence[bytes] = ()


class MessageStore:
    def __init__(self, path: str | Path = ":memory:", *, retention_ns: int = DEFAULT_RETENTION_NS,
                 clock: Callable[[], int] = time.time_ns, max_future_ns: int = int(DEFAULT_MAX_FUTURE_S * NS)):
        self.retention_ns = retention_ns
        self.clock = clock
        self.max_future_ns = max_future_ns
        self.refused: collections.Counter[str] = collections.Counter()  # by InvalidMessage.reason
        self._lock = threading.Lock()
        self._path = str(path)
        self._db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._checkpointer: sqlite3.Connection | None = None

    def close(self) -> None:
        with self._lock:
            self._db.close()
            if self._checkpointer is not None:
                self._checkpointer.close()

    def defer_checkpoints(self) -> None:
        """Commits stop checkpointing the WAL themselves (the commit that passes 1,000 pages copies them into the
        database and syncs it: tens of ms on a busy disk, on whatever thread commits). The owner then calls
        checkpoint() from a worker thread; WakuNode writes on its event loop and does so."""
        with self._lock:
            self._db.execute("PRAGMA wal_autocheckpoint=0")

    def checkpoint(self) -> tuple[int, int]:
        """A passive WAL checkpoint on a connection of its own (never waits for, nor blocks, writers and readers;
        call it from a worker thread): (frames in the WAL, frames copied into the database)."""
        if self._path == ":memory:" or self._path.startswith("file::memory:"):
            return 0, 0
        if self._checkpointer is None:
            self._checkpointer = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        _busy, log_frames, done = self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return log_frames, done

    # --- writing ---
    def add(self, pubsub_topic: str, msg: WakuMessage) -> bool:
        """Store a message; False if ephemeral, refused (timestamp), or already stored."""
        return self.add_many([(pubsub_topic, msg)]) == 1

    def add_many(self, items: Iterable[tuple[str, WakuMessage]]) -> int:
        return self.insert_rows(self.rows(items))

    def rows(self, items: Iterable[tuple[str, WakuMessage]]) -> list[tuple]:
        """The table rows of the messages that may be stored (ephemeral and far-future ones are left out, the
        latter counted in `refused`)."""
        now = self.clock()
        rows = []
        for ps, m in items:
            if m.is_ephemeral:
                continue
            try:
                check_timestamp(m.timestamp, now_ns=now, max_future_ns=self.max_future_ns)
            except InvalidMessage as e:
                self.refused[e.reason] += 1
                log.info("store: not storing %s: %s", m.hash(ps).hex()[:16], e)
                continue
            rows.append((m.hash(ps), ps, m.content_topic, m.timestamp, v2_digest(m), now, encode_message(m)))
        return rows

    def insert_rows(self, rows: Sequence[tuple]) -> int:
        """Insert rows made by rows() in one transaction; how many were new. One multi-row INSERT per
        INSERT_ROWS rows (up to INSERT_ROWS: that statement alone, autocommitted): one statement step per batch,
        not one per row (from a worker thread, one hand-over of the GIL and back; WakuNode's writer calls it on
        its loop since issue 21's eighth pass, a query's big flush from a thread)."""
        if not rows:
            return 0
        with self._lock:
            before = self._db.total_changes
            if len(rows) <= INSERT_ROWS:      # one statement is its own transaction: one hand-over of the GIL
                self._db.execute(_insert_sql(len(rows)), [v for r in rows for v in r])
                return self._db.total_changes - before
            self._db.execute("BEGIN")
            try:
                for i in range(0, len(rows), INSERT_ROWS):
                    chunk = rows[i:i + INSERT_ROWS]
                    self._db.execute(_insert_sql(len(chunk)), [v for r in chunk for v in r])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return self._db.total_changes - before

    def prune(self) -> int:
        """Apply the retention policy: drop messages stored more than retention_ns ago."""
        cutoff = self.clock() - self.retention_ns
        with self._lock:
            return self._db.execute("DELETE FROM waku_store WHERE stored_at < ?", (cutoff,)).rowcount

    # --- reading ---
    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM waku_store").fetchone()[0]

    def get(self, msg_hash: bytes) -> StoredMessage | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_COLS} FROM waku_store WHERE hash=?", (msg_hash,)).fetchone()
        return _row(row) if row else None

    def find_v2_cursor(self, digest: bytes, sender_time: int, pubsub_topic: str | None) -> bool:
        sql = "SELECT 1 FROM waku_store WHERE timestamp=? AND digest=?"
        args: list = [sender_time, digest]
        if pubsub_topic:
            sql += " AND pubsub_topic=?"
            args.append(pubsub_topic)
        with self._lock:
            return self._db.execute(sql, args).fetchone() is not None

    def page(self, flt: Filter, *, forward: bool, limit: int, after: tuple[int, bytes] | None = None,
             key: str = "hash") -> list[StoredMessage]:
        """Up to `limit` messages in sort order (timestamp, <key>) strictly after `after` in the paging
        direction (before it when backward). Returned in paging order (descending when backward)."""
        assert key in ("hash", "digest")
        where, args = _where(flt)
        if after is not None:
            where.append(f"(timestamp, {key}) {'>' if forward else '<'} (?, ?)")
            args += list(after)
        order = "ASC" if forward else "DESC"
        sql = (f"SELECT {_COLS} FROM waku_store {'WHERE ' + ' AND '.join(where) if where else ''} "
               f"ORDER BY timestamp {order}, {key} {order} LIMIT ?")
        with self._lock:
            rows = self._db.execute(sql, [*args, limit]).fetchall()
        return [_row(r) for r in rows]


_COLS = "hash, pubsub_topic, digest, stored_at, message"
INSERT_ROWS = 128           # rows per INSERT statement (7 parameters each; SQLite's old limit was 999 per statement)


@functools.lru_cache(maxsize=None)
def _insert_sql(n: int) -> str:
    return "INSERT OR IGNORE INTO waku_store VALUES " + ",".join(["(?,?,?,?,?,?,?)"] * n)


def _row(r) -> StoredMessage:
    return StoredMessage(hash=r[0], pubsub_topic=r[1], digest=r[2], stored_at=r[3],
                         message=decode_message(r[4]))


def _where(flt: Filter) -> tuple[list[str], list]:
    where, args = [], []
    if flt.pubsub_topic:
        where.append("pubsub_topic = ?")
        args.append(flt.pubsub_topic)
    if flt.content_topics:
        where.append(f"content_topic IN ({','.join('?' * len(flt.content_topics))})")
        args += list(flt.content_topics)
    if flt.hashes:
        where.append(f"hash IN ({','.join('?' * len(flt.hashes))})")
        args += list(flt.hashes)
    if flt.start is not None:
        where.append("timestamp >= ?")
        args.append(flt.start)
    if flt.end is not None:
        where.append("timestamp <= ?")
        args.append(flt.end)
    return where, args
