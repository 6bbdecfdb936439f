"""7-day windows and 30 MB chunks, as status-go cuts them (WIRE-FORMAT.md section 2)."""
from __future__ import annotations

from typing import Iterable, Iterator

from core.archive.codec import ArchiveMessage
from core.archive.constants import MAX_ARCHIVE_PAYLOAD, PARTITION_SECONDS


def partitions(start: int, end: int, interval: int = PARTITION_SECONDS) -> list[tuple[int, int]]:
    """[from, to) windows: start + k*interval, the last one ending at `end` (not calendar-aligned)."""
    if interval <= 0:
        raise ValueError("partition interval must be positive")
    out = []
    lo = start
    while lo < end:
        hi = min(lo + interval, end)
        out.append((lo, hi))
        lo = hi
    return out


def message_order(m: ArchiveMessage) -> tuple[int, bytes]:
    """Our deterministic archive order (status-go has none): by (timestamp, hash)."""
    return (m.timestamp, m.hash)


def chunk_messages(messages: Iterable[ArchiveMessage],
                   cap: int = MAX_ARCHIVE_PAYLOAD) -> Iterator[list[ArchiveMessage]]:
    """Split ordered messages into chunks whose summed len(payload)+len(sig) stays within `cap`.

    A single message over the cap is dropped, as status-go does."""
    chunk: list[ArchiveMessage] = []
    total = 0
    for m in messages:
        size = m.chunk_size
        if size > cap:
            continue
        if total + size > cap and chunk:
            yield chunk
            chunk, total = [], 0
        chunk.append(m)
        total += size
    if chunk:
        yield chunk
