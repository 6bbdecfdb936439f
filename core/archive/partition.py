"""7-day windows and 30 MB chunks, as status-go cuts them (WIRE-FORMAT.md section 2)."""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

from core.archive.codec import ArchiveMessage
from core.archive.constants import MAX_ARCHIVE_PAYLOAD, PARTITION_SECONDS


def windows_start(last_end: int | None, oldest: Callable[[], int | None]) -> int | None:
    """Where the next windows start: the end of the last archive, else the oldest stored message (status-go's rule).
    `oldest` is asked only when there is no archive yet (it is a query of the store)."""
    return last_end if last_end is not None else oldest()


def missing_windows(last_end: int | None, oldest: Callable[[], int | None], end: int, start: int | None = None,
                    interval: int = PARTITION_SECONDS) -> tuple[int | None, list[tuple[int, int]]]:
    """(start, the windows from it up to `end`): `start` if given, else windows_start's; none if it is not before
    `end`. The one plan that every builder (local, Spark, Codex) and the control node's schedule follow."""
    if start is None:
        start = windows_start(last_end, oldest)
    if start is None or start >= end:
        return start, []
    return start, partitions(start, end, interval)


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
