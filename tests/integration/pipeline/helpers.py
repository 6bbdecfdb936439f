"""Data sets for the pipeline tests: real status-go-shaped SQLite stores."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from core.archive.codec import ArchiveMessage
from core.storage import waku_messages
from core.synth import chat_topic

WEEK = 7 * 24 * 3600
T0 = 1_700_000_000
COMMUNITY = "0x02" + "ab" * 32
TOPICS = [chat_topic(f"{COMMUNITY}-chan{i}") for i in range(2)]
OTHER_TOPIC = chat_topic("someone-else")
SIG = b"\x04" + b"\x11" * 64


def msg(ts: int, payload: bytes, topic: bytes = TOPICS[0], sig: bytes = SIG, tag: bytes = b"") -> ArchiveMessage:
    h = hashlib.sha256(topic + payload[:64] + len(payload).to_bytes(4, "big") + ts.to_bytes(8, "big") + tag).digest()
    return ArchiveMessage(sig, ts, topic, payload, b"", h)


def write_store(path: Path, messages) -> Path:
    con = waku_messages.connect(path)
    waku_messages.insert_messages(con, messages)
    con.commit()
    con.close()
    return path


def folder_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), for exact before/after comparisons."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def history_tables(db: Path) -> list[list[tuple]]:
    """Every row of a member history database's three tables, in a fixed order (to compare two imports)."""
    con = sqlite3.connect(db)
    try:
        return [con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("history_messages", "community_message_archive_hashes", "communities_archive_info")]
    finally:
        con.close()
