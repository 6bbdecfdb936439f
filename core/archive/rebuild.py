"""Rebuild an index from `data` alone: archives are self-describing.

`data` is a run of archives, each an encoded protobuf (a WakuMessageArchive; in encrypted communities the
hash-ratchet ProtocolMessage that wraps one) followed by zero padding up to `codec.padded_size(raw)`, the next
starting right after. A protobuf field tag is never the byte 0x00 (there is no field number 0), so walking the
top-level fields from an archive's start, the first 0x00 at a field boundary is where its raw bytes end.

One size has no padding: raw exactly one piece (status-go's rule gives it padding 0). There the next archive
starts right at the piece boundary, and it is told apart from a continuation by its first field number being
lower than the last one read: encoders write fields in ascending order and an archive ends with its highest
field (messages = 3, or the ProtocolMessage's encrypted_message = 101), while an archive starts with field 1 or 2.

Each archive found must have all-zero padding inside `data` and decode (after `open_archive`, which decrypts);
its entry is built from its own metadata. Anything else raises RebuildError naming the offset: the caller then
refuses rather than guess.
"""
from __future__ import annotations

import mmap
from pathlib import Path
from typing import Callable, Iterable

from core.archive import codec
from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.varint import DecodeError, next_field

Opener = Callable[[bytes], bytes]


class RebuildError(ArchiveError):
    code = "rebuild-failed"


def raw_end(buf, start: int, end: int) -> int:
    """Where the raw protobuf that starts at `buf[start]` ends (exclusive), reading no further than `end`."""
    pos, last = start, 0
    while pos < end:
        if buf[pos] == 0:
            return pos
        try:
            field, wire, nxt = next_field(buf, pos, end)
        except DecodeError as e:
            raise RebuildError(f"byte {pos}: not protobuf ({e})") from None
        if pos - start == PIECE_LENGTH and field < last:
            return pos  # raw exactly one piece, padding 0: the next archive starts here
        if field == 0:
            raise RebuildError(f"byte {pos}: field number 0 is not protobuf")
        if nxt > end:
            raise RebuildError(f"the archive starting at byte {start} runs past the end of data ({end} bytes)")
        pos, last = nxt, field
    return pos


def entry_at(buf, start: int, end: int, open_archive: Opener | None = None) -> IndexEntry:
    """The index entry of the complete archive at `start`; RebuildError if there is none."""
    stop = raw_end(buf, start, end)
    raw_len = stop - start
    if raw_len == 0:
        raise RebuildError(f"byte {start}: a zero byte where an archive should start")
    size, padding = codec.padded_size(raw_len)
    if start + size > end:
        raise RebuildError(f"the archive at byte {start} needs {size} bytes with its padding, data ends "
                           f"{end - start} bytes after its start (an incomplete archive)")
    if bytes(buf[stop:start + size]).count(0) != padding:
        raise RebuildError(f"the padding of the archive at byte {start} holds non-zero bytes")
    raw = bytes(buf[start:stop])
    try:
        arch = codec.decode_archive(open_archive(raw) if open_archive is not None else raw)
    except ArchiveError as e:
        raise RebuildError(f"the archive at byte {start} does not decode: {e}") from None
    return IndexEntry(arch.start, arch.end, tuple(arch.topics), start, size, padding)


def walk(buf, length: int, open_archive: Opener | None = None) -> dict[str, IndexEntry]:
    """Entries of the archives in `buf[:length]`, which must be exactly a run of complete archives."""
    out: dict[str, IndexEntry] = {}
    pos = 0
    while pos < length:
        e = entry_at(buf, pos, length, open_archive)
        out[e.archive_id] = e
        pos += e.size
    return out


def rebuild_entries(data_path: Path | str, open_archive: Opener | None = None,
                    length: int | None = None) -> dict[str, IndexEntry]:
    """The index of `data_path` (its first `length` bytes), read from the archives themselves. Only reads."""
    with open(data_path, "rb") as f:
        size = f.seek(0, 2)
        length = size if length is None else min(length, size)
        if not length:
            return {}
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return walk(m, length, open_archive)


def layout_fits(data_path: Path | str, entries: Iterable[IndexEntry]) -> bool:
    """True when each entry's archive in `data` has its protobuf end at offset + raw_size and zero padding up
    to offset + size (the archive is not decoded: this works on encrypted archives too)."""
    entries = list(entries)
    if not entries:
        return True
    with open(data_path, "rb") as f:
        size = f.seek(0, 2)
        if not size:
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            for e in entries:
                stop = e.offset + e.raw_size
                if e.offset + e.size > size or e.raw_size <= 0:
                    return False
                try:
                    if raw_end(m, e.offset, stop) != stop:
                        return False
                except RebuildError:
                    return False
                if bytes(m[stop:e.offset + e.size]).count(0) != e.padding:
                    return False
    return True

