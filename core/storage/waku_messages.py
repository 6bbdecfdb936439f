"""The control node's message store: status-go's `waku_messages` table.

status-go (protocol/migrations/sqlite: waku_messages, then third_party_id) stores topic as "0x"+8 hex text and
the hash as "0x"+64 hex text; sig, payload and padding are blobs, timestamp is seconds.
"""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from core.hextext import from_hex
from core.storage.archive_message import ArchiveMessage

SCHEMA = """
CREATE TABLE IF NOT EXISTS waku_messages (
  sig BLOB NOT NULL,
  timestamp INT NOT NULL,
  topic TEXT NOT NULL,
  payload BLOB NOT NULL,
  padding BLOB NOT NULL,
  hash TEXT PRIMARY KEY NOT NULL,
  third_party_id TEXT
);
CREATE INDEX IF NOT EXISTS waku_messages_timestamp_topic ON waku_messages (timestamp, topic);
"""


def topic_text(topic: bytes) -> str:
    return "0x" + topic.hex()


def connect(path: Path | str, *, create: bool = True) -> sqlite3.Connection:
    if not create and not Path(path).exists():
        raise FileNotFoundError(f"message store {path} does not exist")
    con = sqlite3.connect(str(path), check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")  # WAL stays consistent; live messages also sit on store nodes
    con.executescript(SCHEMA)
    return con


def insert_messages(con: sqlite3.Connection, messages: Iterable[ArchiveMessage]) -> int:
    """Insert (ignoring duplicates by hash). Returns rows inserted."""
    before = con.total_changes
    con.executemany(
        "INSERT OR IGNORE INTO waku_messages (sig, timestamp, topic, payload, padding, hash, third_party_id) "
        "VALUES (?,?,?,?,?,?,?)",
        ((m.sig, m.timestamp, topic_text(m.topic), m.payload, m.padding, "0x" + m.hash.hex(), m.third_party_id)
         for m in messages))
    return con.total_changes - before


def _row_to_message(row: tuple) -> ArchiveMessage:
    sig, ts, topic, payload, padding, h, tpid = row
    return ArchiveMessage(bytes(sig), int(ts), from_hex(topic), bytes(payload), bytes(padding or b""),
                          from_hex(h), tpid or "")


_COLUMNS = "sig, timestamp, topic, payload, padding, hash, third_party_id"


def _range_rows(con: sqlite3.Connection, columns: str, topics: Sequence[bytes], start, end, order: str,
                through: bool = False) -> sqlite3.Cursor:
    marks = ",".join("?" * len(topics))
    return con.execute(
        f"SELECT {columns} FROM waku_messages WHERE timestamp >= ? AND timestamp {'<=' if through else '<'} ? "
        f"AND topic IN ({marks}) ORDER BY {order}", (start, end, *(topic_text(t) for t in topics)))


def query_messages(con: sqlite3.Connection, topics: Sequence[bytes], start: int, end: int) -> Iterator[ArchiveMessage]:
    """Messages with start <= timestamp < end on the given topics, in archive order (timestamp, hash)."""
    if not topics:
        return iter(())
    return map(_row_to_message, _range_rows(con, _COLUMNS, topics, start, end, "timestamp, hash"))


def query_messages_through(con: sqlite3.Connection, topics: Sequence[bytes], first, last) -> Iterator[ArchiveMessage]:
    """query_messages for first <= timestamp <= last (bounds as stored: any SQLite number)."""
    if not topics:
        return iter(())
    return map(_row_to_message, _range_rows(con, _COLUMNS, topics, first, last, "timestamp, hash", through=True))


def scan_rows(con: sqlite3.Connection, topics: Sequence[bytes], start: int, end: int) -> sqlite3.Cursor:
    """Raw rows (sig, timestamp, topic's index in `topics`, payload, padding, hash, third_party_id) with
    start <= timestamp < end on the given topics, in timestamp order only: the (timestamp, topic) index's order,
    which needs no sort (rows of one timestamp come in no particular order). For bulk readers (fetchmany).
    `topics` must not be empty."""
    case = "CASE topic " + " ".join(f"WHEN ? THEN {i}" for i in range(len(topics))) + " END"
    marks = ",".join("?" * len(topics))
    texts = tuple(topic_text(t) for t in topics)
    return con.execute(
        f"SELECT sig, timestamp, {case}, payload, padding, hash, third_party_id FROM waku_messages "
        f"WHERE timestamp >= ? AND timestamp < ? AND topic IN ({marks}) ORDER BY timestamp",
        (*texts, start, end, *texts))


def oldest_timestamp(con: sqlite3.Connection, topics: Sequence[bytes]) -> int | None:
    if not topics:
        return None
    marks = ",".join("?" * len(topics))
    row = con.execute(f"SELECT MIN(timestamp) FROM waku_messages WHERE topic IN ({marks})",
                      [topic_text(t) for t in topics]).fetchone()
    return None if row[0] is None else int(row[0])


def payload_bytes(con: sqlite3.Connection, topics: Sequence[bytes], start: int, end: int) -> tuple[int, int]:
    """(messages, bytes of payload + sig) in [start, end): what a build of that range will write, before padding."""
    if not topics:
        return 0, 0
    marks = ",".join("?" * len(topics))
    row = con.execute(f"SELECT COUNT(*), COALESCE(SUM(LENGTH(payload) + LENGTH(sig) + LENGTH(padding)), 0) "
                      f"FROM waku_messages WHERE timestamp >= ? AND timestamp < ? AND topic IN ({marks})",
                      (start, end, *(topic_text(t) for t in topics))).fetchone()
    return int(row[0]), int(row[1])


def stored_bytes(con: sqlite3.Connection) -> int:
    """Size of the database's pages (WAL included): no range of rows holds more payload + sig + padding than this,
    so a disk-space check that passes with it needs no pass over the rows (payload_bytes)."""
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    return int(pages) * int(con.execute("PRAGMA page_size").fetchone()[0])


# -- retention and late-message bookkeeping (core.node.control) ----------------------------------------------------

def count_range(con: sqlite3.Connection, topics: Sequence[bytes], start: int, end: int) -> int:
    """Rows with start <= timestamp < end on the given topics."""
    if not topics:
        return 0
    marks = ",".join("?" * len(topics))
    row = con.execute(f"SELECT COUNT(*) FROM waku_messages WHERE timestamp >= ? AND timestamp < ? "
                      f"AND topic IN ({marks})", (start, end, *(topic_text(t) for t in topics))).fetchone()
    return int(row[0])


def content_digest(sig: bytes, payload: bytes, padding: bytes) -> bytes:
    """A digest of what an archived message carries besides its hash, timestamp and topic (length-prefixed)."""
    h = hashlib.blake2b(digest_size=20)
    for part in (sig, payload, padding):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.digest()


def identities(con: sqlite3.Connection, topics: Sequence[bytes], start: int, end: int
               ) -> Iterator[tuple[bytes, int, bytes, bytes]]:
    """(hash, timestamp, topic, content_digest) of the rows in [start, end) on the given topics, streamed: what
    retention compares with the messages decoded from an archive."""
    if not topics:
        return
    marks = ",".join("?" * len(topics))
    cur = con.execute(f"SELECT hash, timestamp, topic, sig, payload, padding FROM waku_messages "
                      f"WHERE timestamp >= ? AND timestamp < ? AND topic IN ({marks})",
                      (start, end, *(topic_text(t) for t in topics)))
    while rows := cur.fetchmany(1000):
        for h, ts, t, sig, payload, padding in rows:
            yield (from_hex(h), int(ts), from_hex(t),
                   content_digest(bytes(sig), bytes(payload), bytes(padding or b"")))


def existing_hashes(con: sqlite3.Connection, hashes: Sequence[bytes], batch: int = 500) -> set[bytes]:
    """Which of `hashes` are already stored."""
    out: set[bytes] = set()
    hs = list(hashes)
    for i in range(0, len(hs), batch):
        part = ["0x" + h.hex() for h in hs[i:i + batch]]
        out |= {from_hex(h) for (h,) in con.execute(
            f"SELECT hash FROM waku_messages WHERE hash IN ({','.join('?' * len(part))})", part)}
    return out


def delete_by_hash(con: sqlite3.Connection, hashes: Sequence[bytes], before: int, batch: int = 500) -> int:
    """Delete the rows with these hashes that are also older than `before`, one committed transaction per batch
    (each batch stands on its own: a crash between batches loses nothing the caller had not proven)."""
    deleted = 0
    hs = list(hashes)
    for i in range(0, len(hs), batch):
        part = ["0x" + h.hex() for h in hs[i:i + batch]]
        cur = con.execute(f"DELETE FROM waku_messages WHERE hash IN ({','.join('?' * len(part))}) AND timestamp < ?",
                          (*part, before))
        con.commit()
        deleted += cur.rowcount
    return deleted
