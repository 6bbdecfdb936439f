"""The one check of an index against its `data` file, used before anything trusts an index.

Every path that acts on an index (verify, inspect, the folder's crash recovery, build, spark-build, the control
node's start-up, the member's import) asks `check_entries`; none keeps its own copy of these rules. An index
passes when it has no finding of severity "error":

- each key is the Keccak-256 archive ID of its encoded entry;
- each window is from < to; each size is a positive multiple of the piece length; padding <= size;
- each offset sits on a piece boundary; entries neither overlap nor leave gaps (data is append-only and packed);
- with `data_len`: every archive lies inside `data`.

`check_replacement` is the rule for putting a new index (rebuilt from `data`) in place of one that failed these
checks or left part of `data` unexplained.
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
    pl = PIECE_LENGTH
    layout: list[Finding] = []        # overlaps and gaps, found in the same pass while entries come in data order
    expected, last_offset, last_key, in_order = 0, -1, "", True
    for aid, e in entries.items():
        size, pad, offset = e.size, e.padding, e.offset
        # One expression for the usual, healthy entry (the same rules as _entry_findings): a 200k-entry index is
        # checked in half the time. Anything else gets the detailed findings. The ID decode_index computed is read
        # without the property's call; the padding rule is padded_size's, solved for a size that is a piece
        # multiple (test_index_decode.py checks it against padded_size over every case).
        if not (aid == (e._id or e.archive_id) and e.start < e.end and size and not size % pl and
                not offset % pl and pad <= size and (size == pl or 0 < pad <= pl < size - pad)):
            _entry_findings(aid, e, add)
        if in_order:
            if offset < last_offset or (offset == last_offset and aid <= last_key):
                in_order = False
                continue
            last_offset, last_key = offset, aid
            expected = offset + size if offset == expected and size else _layout_step(layout, aid, e, expected)
    if not in_order:                  # not in data order (decode_index returns them in it): sort, then check
        layout, expected = [], 0
        for aid, e in codec.sorted_entries(entries):
            expected = _layout_step(layout, aid, e, expected)
    out += layout
    if data_len is not None:
        if data_len and not entries:
            add("index-empty", f"the index lists no archive but data holds {data_len} bytes: an empty index never "
                "describes a non-empty data file (damaged or replaced index)")
        elif data_len < expected:
            add("index-past-data", f"index describes {expected} bytes but data holds {data_len}")
        elif data_len > expected:
            add("data-trailing", f"data has {data_len - expected} bytes past the last indexed archive "
                "(an interrupted append; opening the folder for writing cuts them off)", None, "warning")
    return out


def _layout_step(out: list[Finding], aid: str, e: IndexEntry, expected: int) -> int:
    """Where the next archive should start, after checking that `e` starts where the previous one ended."""
    if e.offset < expected:
        out.append(Finding("offset-overlap", f"offset {e.offset} overlaps the previous archive (ends at {expected})",
                           aid))
    elif e.offset > expected:
        out.append(Finding("offset-gap", f"offset {e.offset} leaves a gap after {expected}", aid))
    end = e.offset + e.size
    return end if end > expected else expected


def _entry_findings(aid: str, e: IndexEntry, add) -> None:
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


def described_length(entries: Mapping[str, IndexEntry]) -> int:
    """Bytes of `data` the index accounts for."""
    return max((e.offset + e.size for e in entries.values()), default=0)


def check_replacement(old: Mapping[str, IndexEntry], new: Mapping[str, IndexEntry], data_len: int) -> list[Finding]:
    """Why `new` may not replace `old` as the index of a `data` file of `data_len` bytes (empty: it may).

    `new` must pass `check_entries` and account for every byte of `data`; and every entry of `old` that is
    credible (its key is the Keccak-256 of the entry, so it was written on purpose, not garbled) must be in `new`
    unchanged: otherwise `old` names an archive that `data` does not hold where it says, and replacing it would
    hide that."""
    out = errors(check_entries(new, data_len))
    if described_length(new) != data_len:
        out.append(Finding("index-incomplete", f"the new index covers {described_length(new)} of the "
                           f"{data_len} bytes of data"))
    for aid, e in codec.sorted_entries(old):
        if aid == e.archive_id and new.get(aid) != e:
            out.append(Finding("archive-not-in-data", f"the index names archive {aid} at offset {e.offset} "
                               f"({e.size} bytes) but data does not hold it there", aid))
    return out


MAX_ARCHIVE_BYTES = 64 * 1024 * 1024   # one archive's bytes in `data`: 30 MB of payloads plus framing fits easily


def plan_reads(entries: Mapping[str, IndexEntry], data_len: int) -> list[tuple[str, IndexEntry, str | None]]:
    """(archive ID, entry, skip) in `data` order, where `skip` is None when data[offset : offset + size] may be
    read, else the finding code that forbids reading it (decided before any seek or read).

    An archive is not read when its padding exceeds its size, when it runs past the end of `data`, when it is
    larger than any archive can be, or when it overlaps an earlier archive: so reading every archive of any index,
    however hostile, reads each byte of `data` at most once."""
    out: list[tuple[str, IndexEntry, str | None]] = []
    append = out.append
    end = 0
    for aid, e in codec.sorted_entries(entries):
        if e.padding > e.size:
            append((aid, e, "padding-exceeds-size"))
        elif e.offset + e.size > data_len:
            append((aid, e, "index-past-data"))
        elif e.size > MAX_ARCHIVE_BYTES:
            append((aid, e, "size-absurd"))
        elif e.offset < end:
            append((aid, e, "offset-overlap"))
        else:
            end = e.offset + e.size
            append((aid, e, None))
    return out
