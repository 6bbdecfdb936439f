"""A persistent, bounded peer store with per-peer dial back-off (SQLite, in the node's data folder).

Peers come from configuration ("static"), DNS discovery ("dns"), peer exchange ("px") and peers that dialled us
and told their listen addresses by identify ("inbound"). After a restart the node dials the known-good peers first
(most recently connected), then the untried ones, and skips every peer still in its back-off: after the n-th failed
dial in a row a peer waits `initial_s * factor ** (n - 1)`, capped at `max_s` (nwaku's peer manager: 120 s, x4).
A discovered peer that failed `max_failures` times in a row is forgotten; configured peers are kept.

The file is not trusted: a file that is not a database, fails SQLite's quick check or has another schema is moved
aside (`<name>.bad-<unix time>`) with a warning and a fresh store starts; rows whose peer id, addresses or ENR do
not parse are dropped on load. Thread-safe (one lock); the clock (Unix seconds) is injectable.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import multiaddr
from libp2p.peer.id import ID

from core.waku import enr as enrlib

log = logging.getLogger(__name__)
SCHEMA_VERSION = 1
SOURCES = ("static", "dns", "px", "inbound")
MAX_ADDRS = 8                  # addresses kept per peer (newest first)
_COLUMNS = ["peer_id", "addrs", "enr", "source", "added", "last_connected", "last_attempt", "failures",
            "next_attempt"]
_SCHEMA = """CREATE TABLE peers (
    peer_id TEXT PRIMARY KEY, addrs TEXT NOT NULL, enr TEXT, source TEXT NOT NULL, added REAL NOT NULL,
    last_connected REAL, last_attempt REAL, failures INTEGER NOT NULL DEFAULT 0, next_attempt REAL NOT NULL DEFAULT 0
)"""


class PeerStoreCorrupt(Exception):
    """The store file cannot be used as it is (set aside by PeerStore)."""


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 120.0
    factor: float = 4.0
    max_s: float = 6 * 3600.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after `failures` failed dials in a row (0 for none)."""
        if failures <= 0:
            return 0.0
        return min(self.initial_s * self.factor ** min(failures - 1, 64), self.max_s)


@dataclass(frozen=True)
class StoredPeer:
    peer_id: str
    addrs: tuple[str, ...]
    enr: str | None
    source: str
    added: float
    last_connected: float | None
    last_attempt: float | None
    failures: int
    next_attempt: float

    def record(self) -> enrlib.Enr | None:
        return enrlib.from_text(self.enr) if self.enr else None


def _check_row(row: tuple) -> StoredPeer:
    """A row as read from disk, validated; raises ValueError (or EnrError) when anything does not parse."""
    peer_id, addrs_json, enr_text, source, added, last_conn, last_att, failures, next_att = row
    ID.from_base58(peer_id)
    addrs = json.loads(addrs_json)
    if not isinstance(addrs, list) or not all(isinstance(a, str) for a in addrs):
        raise ValueError("addrs is not a list of strings")
    for a in addrs:
        multiaddr.Multiaddr(a)
    if enr_text is not None and enrlib.from_text(enr_text).peer_id != peer_id:
        raise ValueError("ENR of another peer")
    if source not in SOURCES or not isinstance(failures, int) or failures < 0:
        raise ValueError(f"bad source {source!r} or failures {failures!r}")
    for v in (added, next_att):
        float(v)
    return StoredPeer(peer_id, tuple(addrs), enr_text, source, float(added),
                      None if last_conn is None else float(last_conn), None if last_att is None else float(last_att),
                      failures, float(next_att))


class PeerStore:
    def __init__(self, path: Path | str | None, *, capacity: int = 500, backoff: Backoff = Backoff(),
                 max_failures: int = 8, clock: Callable[[], float] = time.time):
        self.path = None if path is None else Path(path)
        self.capacity, self.backoff, self.max_failures, self.clock = capacity, backoff, max_failures, clock
        self.set_aside: Path | None = None   # where a bad file went, if one did
        self.dropped_rows = 0                # rows refused on load
        self._lock = threading.Lock()
        try:
            self._db = self._open()
        except (sqlite3.DatabaseError, PeerStoreCorrupt) as e:
            self.set_aside = self._set_aside()
            log.warning("peer store %s is unusable (%s): moved to %s, starting empty", self.path, e, self.set_aside)
            self._db = self._open()

    # --- opening, checking ---
    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:" if self.path is None else str(self.path), check_same_thread=False,
                             isolation_level=None)
        try:
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise PeerStoreCorrupt("quick check failed")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            if version == 0 and not tables:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION or tables != ["peers"] or \
                    [r[1] for r in db.execute("PRAGMA table_info(peers)")] != _COLUMNS:
                raise PeerStoreCorrupt(f"unknown schema (version {version}, tables {tables})")
            db.execute("PRAGMA synchronous=NORMAL")
            self._drop_bad_rows(db)
        except BaseException:
            db.close()
            raise
        return db

    def _drop_bad_rows(self, db: sqlite3.Connection) -> None:
        bad = []
        for row in db.execute(f"SELECT {', '.join(_COLUMNS)} FROM peers"):
            try:
                _check_row(row)
            except Exception as e:  # noqa: BLE001 - whatever a hand-edited row holds
                bad.append(row[0])
                log.debug("peer store row %r refused: %s", row[0], e)
        for pid in bad:
            db.execute("DELETE FROM peers WHERE peer_id = ?", (pid,))
        if bad:
            self.dropped_rows = len(bad)
            log.warning("peer store %s: %d unreadable rows dropped", self.path, len(bad))

    def _set_aside(self) -> Path | None:
        if self.path is None or not self.path.exists():
            return None
        dest = self.path.with_name(f"{self.path.name}.bad-{int(self.clock())}")
        n = 1
        while dest.exists():
            dest = self.path.with_name(f"{self.path.name}.bad-{int(self.clock())}-{n}")
            n += 1
        self.path.replace(dest)
        for suffix in ("-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
        return dest

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- reading ---
    def get(self, peer_id: str) -> StoredPeer | None:
        with self._lock:
            row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM peers WHERE peer_id = ?",
                                   (peer_id,)).fetchone()
        return None if row is None else _check_row(row)

    def peers(self) -> list[StoredPeer]:
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM peers").fetchall()
        return [_check_row(r) for r in rows]

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM peers").fetchone()[0]

    def candidates(self, limit: int, exclude: Iterable[str] = ()) -> list[StoredPeer]:
        """Peers to dial now: out of back-off, known-good first (latest connection), then never connected
        (configured before discovered), then the ones that failed, oldest attempt first."""
        skip, now = set(exclude), self.clock()
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM peers WHERE next_attempt <= ? ORDER BY failures > 0, "
                "last_connected IS NULL, last_connected DESC, source != 'static', last_attempt, added",
                (now,)).fetchall()
        out = []
        for r in rows:
            if r[0] in skip:
                continue
            out.append(_check_row(r))
            if len(out) >= limit:
                break
        return out

    def can_dial(self, peer_id: str) -> bool:
        p = self.get(peer_id)
        return p is None or p.next_attempt <= self.clock()

    # --- writing ---
    def add(self, peer_id: str, addrs: Iterable[str], source: str, enr: enrlib.Enr | None = None) -> None:
        """Remember a peer (merging addresses; a newer ENR replaces the old one; "static" sticks)."""
        if source not in SOURCES:
            raise ValueError(f"unknown peer source {source!r}")
        ID.from_base58(peer_id)
        clean = []
        for a in addrs:
            a = _strip_p2p(str(multiaddr.Multiaddr(a)))
            if a not in clean:
                clean.append(a)
        enr_text = None
        if enr is not None:
            if enr.peer_id != peer_id:
                raise ValueError("ENR of another peer")
            enr_text = enr.to_text()
        with self._lock:
            old = self._db.execute("SELECT addrs, enr, source FROM peers WHERE peer_id = ?", (peer_id,)).fetchone()
            if old is None:
                self._db.execute("INSERT INTO peers (peer_id, addrs, enr, source, added) VALUES (?, ?, ?, ?, ?)",
                                 (peer_id, json.dumps(clean[:MAX_ADDRS]), enr_text, source, self.clock()))
                self._evict()
                return
            merged = (clean + [a for a in json.loads(old[0]) if a not in clean])[:MAX_ADDRS]
            if enr is not None and old[1] is not None and enrlib.from_text(old[1]).seq > enr.seq:
                enr_text = old[1]
            src = "static" if "static" in (old[2], source) else old[2]
            self._db.execute("UPDATE peers SET addrs = ?, enr = COALESCE(?, enr), source = ? WHERE peer_id = ?",
                             (json.dumps(merged), enr_text, src, peer_id))

    def record_success(self, peer_id: str) -> None:
        now = self.clock()
        with self._lock:
            self._db.execute("UPDATE peers SET last_connected = ?, last_attempt = ?, failures = 0, next_attempt = 0 "
                             "WHERE peer_id = ?", (now, now, peer_id))

    def record_failure(self, peer_id: str) -> None:
        """One more failed dial: back off, or forget a discovered peer that failed too often."""
        now = self.clock()
        with self._lock:
            row = self._db.execute("SELECT failures, source FROM peers WHERE peer_id = ?", (peer_id,)).fetchone()
            if row is None:
                return
            failures = row[0] + 1
            if failures >= self.max_failures and row[1] != "static":
                self._db.execute("DELETE FROM peers WHERE peer_id = ?", (peer_id,))
                return
            self._db.execute("UPDATE peers SET failures = ?, last_attempt = ?, next_attempt = ? WHERE peer_id = ?",
                             (failures, now, now + self.backoff.delay(failures), peer_id))

    def remove(self, peer_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM peers WHERE peer_id = ?", (peer_id,))

    def _evict(self) -> None:
        """Over capacity: drop discovered peers, failing ones first, then the least recently connected."""
        excess = self._db.execute("SELECT COUNT(*) FROM peers").fetchone()[0] - self.capacity
        if excess > 0:
            self._db.execute(
                "DELETE FROM peers WHERE peer_id IN (SELECT peer_id FROM peers WHERE source != 'static' "
                "ORDER BY failures DESC, last_connected IS NOT NULL, last_connected, added LIMIT ?)", (excess,))


def _strip_p2p(addr: str) -> str:
    i = addr.find("/p2p/")
    return addr if i < 0 else addr[:i]
