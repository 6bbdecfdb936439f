"""Archive folders whose windows are split into many chunks, without 30 MB of test data.

status-go cuts a window into chunks of at most 30 MB; `chunk_messages` takes the cap as a parameter, so a small
cap gives the same shape (several archives with the same [from, to)) from a few kilobytes.
"""
from __future__ import annotations

import hashlib
import random
from pathlib import Path

from core.archive import codec
from core.archive.codec import ArchiveMessage
from core.archive.folder import ArchiveFolder, NewArchive
from core.archive.partition import chunk_messages

WEEK = 7 * 24 * 3600
T0 = 1_700_000_000
COMMUNITY = "0x02" + "cd" * 32
TOPIC = b"\x01\x02\x03\x04"


def message(ts: int, n: int, size: int) -> ArchiveMessage:
    payload = hashlib.sha256(n.to_bytes(8, "big")).digest() * (size // 32 + 1)
    return ArchiveMessage(b"\x04" + b"\x22" * 64, ts, TOPIC, payload[:size], b"",
                          hashlib.sha256(b"msg" + n.to_bytes(8, "big")).digest())


def random_messages(rng: random.Random, weeks: int, count: int) -> list[ArchiveMessage]:
    return [message(T0 + rng.randrange(weeks * WEEK), i, rng.randrange(10, 400)) for i in range(count)]


def build_folder(path: Path, messages: list[ArchiveMessage], cap: int, weeks: int) -> ArchiveFolder:
    """`data` + `index` for `messages` in 7-day windows from T0, each window cut into chunks of at most `cap`."""
    archives = []
    for w in range(weeks):
        lo, hi = T0 + w * WEEK, T0 + (w + 1) * WEEK
        ms = sorted((m for m in messages if lo <= m.timestamp < hi), key=lambda m: (m.timestamp, m.hash))
        for chunk in chunk_messages(ms, cap):
            archives.append(NewArchive(lo, hi, (TOPIC,), codec.encode_archive(lo, hi, [TOPIC], chunk)))
    folder = ArchiveFolder(path, create=True)
    folder.append(archives)
    return folder
