"""The one check of an index against its `data` file, used before anything trusts an index.

Every path that acts on an index (verify, inspect, the folder's crash recovery, build, spark-build, the control
node's start-up, the member's import) asks `check_entries`; none keeps its own copy of these rules. An index
passes when it has no finding of severity "error":

- each key is the Keccak-256 archive ID of its encoded entry;
- each window is from < to; each size is a positive multiple of the piece length; padding <= size;
- each offset sits on a piece boundary; entries neither overlap nor leave gaps (data is append-only and packed);
- with `data_len`: every archive lies inside `data`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from core.archive import codec
from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    archive_id: str | None = None
    severity: str = "error"


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def check_entries(entries: Mapping[str, IndexEntry], data_len: int | None = None) -> list[Finding]:
    """All index-level faults of `entries` (and, with `data_len`, against a `data` file of that length)."""
    out: list[Finding] = []
    add = lambda code, msg, aid=None, sev="error": out.append(Finding(code, msg, aid, sev))  # noqa: E731
    for aid, e in entries.items():
        if aid != e.archive_id:
            add("key-mismatch", f"key {aid} is not the Keccak-256 of its entry ({e.archive_id})", aid)
        if e.start >= e.end:
            add("window-inverted", f"from {e.start} is not before to {e.end}", aid)
        if e.size == 0 or e.size % PIECE_LENGTH:
            add("size-not-piece-multiple", f"size {e.size} is not a positive multiple of {PIECE_LENGTH}", aid)
        if e.offset % PIECE_LENGTH:
            add("offset-not-piece-aligned", f"offset {e.offset} is not on a {PIECE_LENGTH}-byte piece boundary", aid)
        if e.padding > e.size:
            add("padding-exceeds-size", f"padding {e.padding} is larger than size {e.size}", aid)
        elif codec.padded_size(e.raw_size) != (e.size, e.padding):
            add("padding-formula", f"size {e.size} / padding {e.padding} do not follow status-go's padding rule for "
                f"{e.raw_size} bytes (expected {codec.padded_size(e.raw_size)})", aid, "warning")
    expected = 0
    for aid, e in codec.sorted_entries(entries):
        if e.offset < expected:
            add("offset-overlap", f"offset {e.offset} overlaps the previous archive (ends at {expected})", aid)
        elif e.offset > expected:
            add("offset-gap", f"offset {e.offset} leaves a gap after {expected}", aid)
        expected = max(expected, e.offset + e.size)
    if data_len is not None:
        if data_len < expected:
            add("index-past-data", f"index describes {expected} bytes but data holds {data_len}")
        elif data_len > expected:
            add("data-trailing", f"data has {data_len - expected} bytes past the last indexed archive "
                "(an interrupted append; opening the folder for writing cuts them off)", None, "warning")
    return out


def described_length(entries: Mapping[str, IndexEntry]) -> int:
    """Bytes of `data` the index accounts for."""
    return max((e.offset + e.size for e in entries.values()), default=0)
