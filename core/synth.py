"""Deterministic generator of a control node's message store (status-go `waku_messages`) shaped like Status traffic.

Same arguments and seed -> the same file, byte for byte. Payloads are opaque here; the Status layer's traffic
generator (core/status) produces real signed, encrypted messages when a test needs to decode them.
"""
from __future__ import annotations

import hashlib
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from coincurve import PrivateKey

from core.archive.codec import ArchiveMessage, keccak256
from core.storage import waku_messages

WEEK = 7 * 24 * 3600
DEFAULT_START = 1_700_000_000  # 2023-11-14: a fixed origin keeps the output reproducible


@dataclass(frozen=True)
class SynthResult:
    path: str
    community_id: str
    chat_ids: list[str]
    topics: list[str]
    messages: int
    start: int
    end: int

    def to_json(self) -> dict:
        return self.__dict__.copy()


def community_key(seed: int) -> PrivateKey:
    return PrivateKey(keccak256(b"archivist-synth-community" + seed.to_bytes(8, "big")))


def community_id_of(key: PrivateKey) -> str:
    return "0x" + key.public_key.format(compressed=True).hex()


def chat_topic(chat_id: str) -> bytes:
    return keccak256(chat_id.encode())[:4]


def synthesize(path: Path | str, *, messages: int = 10_000, weeks: int = 8, channels: int = 3,
               min_payload: int = 80, max_payload: int = 1200, seed: int = 1,
               start: int = DEFAULT_START, authors: int = 50) -> SynthResult:
    """Write `messages` messages spread over `weeks` weeks on `channels` channel topics into a new SQLite file."""
    path = Path(path)
    if path.exists():
        path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    rng = random.Random(seed)
    key = community_key(seed)
    cid = community_id_of(key)
    chat_ids = [f"{cid}{'%08x' % rng.getrandbits(32)}-{i:04x}-4000-8000-{rng.getrandbits(48):012x}"
                for i in range(channels)]
    topics = [chat_topic(c) for c in chat_ids]
    signers = [PrivateKey(keccak256(b"author" + seed.to_bytes(8, "big") + i.to_bytes(4, "big"))).public_key
               .format(compressed=False) for i in range(max(1, authors))]
    span = max(1, weeks * WEEK)
    con = waku_messages.connect(path)
    con.execute("PRAGMA synchronous=OFF")
    batch: list[ArchiveMessage] = []
    for i in range(messages):
        ts = start + (i * span) // max(1, messages) + rng.randrange(0, max(1, span // max(1, messages)))
        size = min(max_payload, max(min_payload, int(rng.lognormvariate(5.5, 0.8))))
        payload = rng.randbytes(size)
        topic = topics[rng.randrange(len(topics))] if rng.random() > 0.3 else topics[0]
        h = hashlib.sha256(topic + payload + ts.to_bytes(8, "big")).digest()
        batch.append(ArchiveMessage(signers[rng.randrange(len(signers))], ts, topic, payload, b"", h))
        if len(batch) >= 50_000:
            waku_messages.insert_messages(con, batch)
            batch.clear()
    waku_messages.insert_messages(con, batch)
    con.commit()
    con.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    con.close()
    return SynthResult(str(path), cid, chat_ids, ["0x" + t.hex() for t in topics], messages, start, start + span)


def count_rows(path: Path | str) -> int:
    con = sqlite3.connect(str(path))
    try:
        return con.execute("SELECT COUNT(*) FROM waku_messages").fetchone()[0]
    finally:
        con.close()
