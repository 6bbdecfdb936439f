"""A community's archive folder (`data` + `index`), written crash-safely.

Order of writes: archives are appended to `data` and fsynced, then `index` is replaced atomically
(tmp file, fsync, rename, fsync of the folder). So after a crash at any point `data` is at least as long as the
index says; on open, bytes past the last indexed archive (an interrupted append) are cut off. An index that
points past the end of `data` cannot come from us and is reported as corruption.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from core.archive import codec
from core.archive.codec import IndexEntry
from core.archive.constants import DATA_FILE, INDEX_FILE
from core.archive.errors import CorruptFolder


@dataclass(frozen=True, slots=True)
class NewArchive:
    """An encoded archive ready to append: its window, topics and unpadded bytes."""

    start: int
    end: int
    topics: tuple[bytes, ...]
    raw: bytes


class IndexCodec(NamedTuple):
    """How the index is stored: encrypted communities wrap it (hash ratchet), as status-go does."""

    wrap: Callable[[bytes], bytes]
    unwrap: Callable[[bytes], bytes]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new file, never a mix."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class ArchiveFolder:
    """`<data_dir>/<community_id>/{data,index}`. Opening it recovers from an interrupted append."""

    def __init__(self, path: Path | str, *, create: bool = False, recover: bool = True,
                 index_codec: IndexCodec | None = None):
        self.path = Path(path)
        self.index_codec = index_codec
        if create:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not self.path.is_dir():
            raise CorruptFolder(f"{self.path} is not an archive folder", code="not-a-folder")
        self.data_path = self.path / DATA_FILE
        self.index_path = self.path / INDEX_FILE
        self.recovered_bytes = 0
        self.entries = self._load_index()
        self._check_and_recover(recover)

    # -- reading -------------------------------------------------------------------------------------------
    def _load_index(self) -> dict[str, IndexEntry]:
        if not self.index_path.exists():
            return {}
        raw = self.index_path.read_bytes()
        if raw and self.index_codec is not None:
            raw = self.index_codec.unwrap(raw)
        return codec.decode_index(raw) if raw else {}

    @property
    def described_length(self) -> int:
        """Bytes of `data` the index accounts for."""
        return max((e.offset + e.size for e in self.entries.values()), default=0)

    def _check_and_recover(self, recover: bool) -> None:
        length = self.data_path.stat().st_size if self.data_path.exists() else 0
        want = self.described_length
        if length < want:
            raise CorruptFolder(f"index describes {want} bytes but data holds only {length}: "
                                f"index points past the end of data", code="index-past-data")
        if length > want and recover:
            with open(self.data_path, "r+b") as f:
                f.truncate(want)
                f.flush()
                os.fsync(f.fileno())
            self.recovered_bytes = length - want

    def ordered(self) -> list[tuple[str, IndexEntry]]:
        return codec.sorted_entries(self.entries)

    @property
    def last_end(self) -> int | None:
        """End of the newest archive window, where the next build starts."""
        return max((e.end for e in self.entries.values()), default=None)

    def read_raw(self, archive_id: str) -> bytes:
        e = self.entries[archive_id]
        with open(self.data_path, "rb") as f:
            f.seek(e.offset)
            return f.read(e.raw_size)

    def read_archive(self, archive_id: str) -> codec.DecodedArchive:
        if archive_id not in self.entries:
            raise KeyError(f"no archive {archive_id} in {self.path}")
        return codec.decode_archive(self.read_raw(archive_id), archive_id=archive_id)

    # -- writing -------------------------------------------------------------------------------------------
    def append(self, archives: Sequence[NewArchive]) -> list[str]:
        """Append archives to `data`, fsync, then replace `index`. Returns the new archive IDs in order."""
        if not archives:
            return []
        offset = self.described_length
        new: dict[str, IndexEntry] = {}
        order: list[str] = []
        with open(self.data_path, "ab") as f:
            if f.tell() != offset:  # only possible if someone wrote behind our back since open
                raise CorruptFolder(f"data is {f.tell()} bytes, index describes {offset}", code="data-changed")
            for a in archives:
                size, padding = codec.padded_size(len(a.raw))
                entry = IndexEntry(a.start, a.end, tuple(a.topics), offset, size, padding)
                f.write(a.raw)
                f.write(bytes(padding))
                aid = entry.archive_id
                new[aid] = entry
                order.append(aid)
                offset += size
            f.flush()
            os.fsync(f.fileno())
        merged = {**self.entries, **new}
        index = codec.encode_index(merged)
        atomic_write(self.index_path, self.index_codec.wrap(index) if self.index_codec is not None else index)
        self.entries = merged
        return order
