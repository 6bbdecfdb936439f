"""A community's archive folder: `data` + `index`, written crash-safely, never cut on an unchecked index.

Files: `data` (the archives, append-only), `index`, `index.prev` (the index before the last replace, so a bad
write can be undone), `append.pending` (exists only while an append is under way: the offset where it started),
and, after an index that failed its check was rebuilt, `index.damaged` (the failed bytes, kept for support).

Appending (`append`), in this order:
  1. check that `data` ends where the index does; write `append.pending` = that offset (atomically);
  2. append the archives to `data`, fsync;
  3. copy the current index to `index.prev` (atomically);
  4. write `index.tmp`, fsync;
  5. remove `append.pending`, fsync the folder;
  6. rename `index.tmp` over `index`, fsync the folder.
So `index` never describes a byte that is not fsynced in `data`. An I/O error at any step (disk full, EIO, a
read-only folder) undoes what was done, leaves no tmp file and raises an ArchiveError (`disk-full`, `read-only`,
`io-error`) naming the file.

Opening checks the index with core.archive.index_check.check_entries before anything trusts it. On any error
(undecodable, a key that is not the Keccak of its entry, overlap, gap, past the end of data, ...) nothing is cut:
the index is rebuilt from `data` (core.archive.rebuild) and put in place only if `check_replacement` accepts it
(it covers all of data and keeps every credible entry), and `rebuilt_index` says why; otherwise CorruptFolder,
one line, every byte kept. A missing or empty index over a non-empty `data` (`index-empty`) is handled the
same way, except when (3) below proves all of `data` an interrupted first append: then it is cut.

Cutting bytes past a valid index (`_cut`). The proof that no message is lost:
  (1) the index passed check_entries: contiguous archives from byte 0, inside data, keys that are their Keccak;
  (2) the cut starts at or after the end of the last indexed archive, so no indexed archive loses a byte;
  (3) no committed index ever named the cut bytes, because each of them is either
      (a) in a run of fewer than one piece after the end of the index (every archive takes a whole piece), or
      (b) past the offset in `append.pending`: `data` ended there when the append began (step 1), and every
          index committed since either removed `append.pending` first (step 5 before step 6) or, rebuilt on
          open, stopped at that offset;
  (4) retention deletes from the source store only messages of indexed, verified archives; by (3) the cut bytes'
      messages never were, so they are still in the store and the next build archives them again, to the same
      bytes.
(1)-(3) are checked at run time right before cutting. When (3) does not hold (an older index restored over a
newer one by hand, a crash between steps 5 and 6) the bytes may be announced archives: they are never cut. The
complete `index.tmp` of step 4, or an index rebuilt from data that keeps every indexed archive, is put in place
instead; failing both, CorruptFolder.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Sequence

from core.archive import codec, diskio, rebuild
from core.archive.codec import IndexEntry
from core.archive.constants import DATA_FILE, INDEX_FILE, PIECE_LENGTH
from core.archive.diskio import atomic_write, discard, disk_error, fsync_dir, tmp_path_of, write_tmp  # noqa: F401
from core.archive.errors import ArchiveError, CorruptFolder
from core.archive.index_check import (Finding, check_entries, check_replacement, described_length, errors)

PENDING_FILE = "append.pending"
PREV_FILE = INDEX_FILE + ".prev"
DAMAGED_FILE = INDEX_FILE + ".damaged"


@dataclass(frozen=True, slots=True)
class NewArchive:
    """An encoded archive ready to append: its window, topics and unpadded bytes."""

    start: int
    end: int
    topics: tuple[bytes, ...]
    raw: bytes


class IndexCodec(NamedTuple):
    """How the index is stored: encrypted communities wrap it (hash ratchet), as status-go does.
    `open_archive` decrypts one archive; without it an encrypted folder's index cannot be rebuilt from data."""

    wrap: Callable[[bytes], bytes]
    unwrap: Callable[[bytes], bytes]
    open_archive: Callable[[bytes], bytes] | None = None


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


class ArchiveFolder:
    """`<data_dir>/<community_id>/{data,index}`. Opening it checks the index and recovers (see the module doc).
    `recover=False` opens read-only: it refuses a bad index and leaves trailing bytes alone."""

    def __init__(self, path: Path | str, *, create: bool = False, recover: bool = True,
                 index_codec: IndexCodec | None = None):
        self.path = Path(path)
        self.index_codec = index_codec
        self.data_path = self.path / DATA_FILE
        self.index_path = self.path / INDEX_FILE
        self.prev_path = self.path / PREV_FILE
        self.pending_path = self.path / PENDING_FILE
        self.recovered_bytes = 0               # bytes of an interrupted append cut off on open
        self.rebuilt_index: str | None = None  # why the index was replaced on open (for logs and the GUI)
        self.entries: dict[str, IndexEntry] = {}
        self._index_raw: bytes | None = None   # the index file as on disk (None: no file)
        if create:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise disk_error(e, self.path, "creating the archive folder", "nothing was written") from None
        elif not self.path.is_dir():
            raise CorruptFolder(f"{self.path} is not an archive folder", code="not-a-folder")
        try:
            self._open(recover)
        except OSError as e:
            raise disk_error(e, getattr(e, "filename", None) or self.path, "opening the archive folder at",
                             "no byte of data was cut") from None

    # -- opening -------------------------------------------------------------------------------------------
    def _data_len(self) -> int:
        return self.data_path.stat().st_size if self.data_path.exists() else 0

    def _decode(self, raw: bytes | None) -> tuple[dict[str, IndexEntry], Finding | None]:
        if not raw:
            return {}, None
        try:
            plain = self.index_codec.unwrap(raw) if self.index_codec is not None else raw
            return codec.decode_index(plain), None
        except ArchiveError as e:
            return {}, Finding(e.code, f"the index does not decode ({_one_line(e)})")

    def _pending_offset(self) -> int | None:
        try:
            text = self.pending_path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            value = int(text.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            return None
        return value if value >= 0 and value % PIECE_LENGTH == 0 else None

    def _open(self, recover: bool) -> None:
        data_len = self._data_len()
        self._index_raw = self.index_path.read_bytes() if self.index_path.exists() else None
        entries, fault = self._decode(self._index_raw)
        findings = [fault] if fault else errors(check_entries(entries, data_len))
        # no index (or an empty one) over data is `index-empty`: damage, unless proof (3) shows that data is an
        # interrupted first append; then, and only then, it is handled like bytes past a valid index
        damaged = bool(findings) and not (not fault and not entries and {f.code for f in findings} == {"index-empty"})
        if not damaged:
            self.entries = entries
        want = self.described_length
        if not findings and data_len == want:
            if recover:
                self._clean_leftovers()
            return
        if not recover:
            if findings:
                raise self._refuse(findings)
            return
        # bytes past `pending` are an append that never committed (proof (3b)), whatever the index says
        pending = self._pending_offset()
        limit = pending if pending is not None and want <= pending < data_len else data_len
        if not damaged:
            if limit - want < PIECE_LENGTH:
                self._cut(want, data_len)
                return
            if self._adopt_index_tmp(data_len):
                return
            findings = findings or [Finding("data-unindexed", f"data holds {data_len - want} bytes past the last "
                                            f"indexed archive (byte {want}) that no interrupted append explains")]
        self._replace_from_data(findings, entries, limit, damaged)
        if limit < data_len:
            self._cut(limit, data_len)
        else:
            self._clean_leftovers()

    def _refuse(self, findings: Sequence[Finding], why: str = "") -> CorruptFolder:
        fault = _one_line(findings[0].message)
        if len(findings) > 1:
            fault += f" (and {len(findings) - 1} more faults)"
        if why:
            fault += f"; {_one_line(why)}"
        prev = " (index.prev holds the one before the last append)" if self.prev_path.exists() else ""
        return CorruptFolder(
            f"archive folder {self.path} is not trusted: {fault}. Nothing was cut, changed or published; to "
            f"recover run `archivist verify {self.path}` and put a good index back{prev}", code=findings[0].code)

    def _replace_from_data(self, findings: list[Finding], old: dict[str, IndexEntry], limit: int,
                           damaged: bool) -> None:
        """Rebuild the index from data[:limit] and put it in place, or refuse. Never writes to `data`."""
        if limit == 0:
            raise self._refuse(findings, "data holds no archive to rebuild the index from")
        opener = None
        if self.index_codec is not None:
            opener = self.index_codec.open_archive
            if opener is None:
                raise self._refuse(findings, "the archives of an encrypted community cannot be read without the "
                                   "community key, so the index is not rebuilt from data here")
        try:
            new = rebuild.rebuild_entries(self.data_path, opener, limit)
        except rebuild.RebuildError as e:
            raise self._refuse(findings, f"rebuilding the index from data failed: {e}") from None
        bad = check_replacement(old, new, limit)
        if bad:
            raise self._refuse(findings, f"the index rebuilt from data cannot replace it: {bad[0].message}")
        index = codec.encode_index(new)
        wrapped = self.index_codec.wrap(index) if self.index_codec is not None else index
        if self._index_raw:  # keep the bytes being replaced: a damaged index for support, a good one as .prev
            atomic_write(self.path / (DAMAGED_FILE if damaged else PREV_FILE), self._index_raw)
        atomic_write(self.index_path, wrapped)
        self.entries, self._index_raw = new, wrapped
        self.rebuilt_index = (f"{_one_line(findings[0].message)}: rebuilt the index from data ({len(new)} "
                              f"archives, {limit} bytes); nothing was cut")

    def _adopt_index_tmp(self, data_len: int) -> bool:
        """A crash between steps 5 and 6 of `append`: `index.tmp` was complete and fsynced before
        `append.pending` went, so it is the commit that only missed its rename. Taken only if it covers all of
        data, keeps every indexed archive, and each new archive's layout (protobuf end, zero padding) fits data."""
        tmp = tmp_path_of(self.index_path)
        if self.pending_path.exists() or not tmp.exists():
            return False
        raw = tmp.read_bytes()
        new, fault = self._decode(raw)
        if fault or check_replacement(self.entries, new, data_len):
            return False
        if not rebuild.layout_fits(self.data_path, [e for k, e in new.items() if k not in self.entries]):
            return False
        diskio.commit_tmp(tmp, self.index_path)
        self.entries, self._index_raw = new, raw
        self.rebuilt_index = "found the index of a finished append that a crash kept from its final rename"
        return True

    def _cut(self, keep: int, data_len: int) -> None:
        """Cut `data` to `keep` bytes, after checking (1)-(3) of the module doc's proof."""
        bad = [f for f in errors(check_entries(self.entries, data_len))                       # (1)
               if not (f.code == "index-empty" and keep == 0)]  # no index: (3) alone proves a cut from byte 0
        if described_length(self.entries) > keep:                                             # (2)
            bad.append(Finding("cut-inside-index", f"cutting at {keep} would cut an indexed archive"))
        pending = self._pending_offset()                                                      # (3)
        unmarked_end = pending if pending is not None and keep <= pending <= data_len else data_len
        if unmarked_end - keep >= PIECE_LENGTH:
            bad.append(Finding("data-unindexed", f"{unmarked_end - keep} bytes at {keep} could hold archives "
                               "and no interrupted append explains them"))
        if bad or self._data_len() != data_len:
            raise self._refuse(bad or [Finding("data-changed", "data changed while the folder was opened")])
        diskio.disk.truncate(self.data_path, keep)
        self.recovered_bytes += data_len - keep
        self._clean_leftovers()

    def _clean_leftovers(self) -> None:
        """Remove what a crash can leave behind once data and index agree: a stale `append.pending` (its append
        committed, or was cut) and tmp files of interrupted atomic writes."""
        for p in (self.pending_path, tmp_path_of(self.pending_path), tmp_path_of(self.index_path),
                  tmp_path_of(self.prev_path), tmp_path_of(self.path / DAMAGED_FILE)):
            if p.exists():
                discard(p)

    # -- reading -------------------------------------------------------------------------------------------
    @property
    def described_length(self) -> int:
        """Bytes of `data` the index accounts for."""
        return described_length(self.entries)

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
    def append(self, archives: Sequence[NewArchive] | Iterable[NewArchive]) -> list[str]:
        """Append archives to `data`, fsync, then replace `index` (steps 1-6 of the module doc).
        Returns the new archive IDs in order. On an I/O error the folder is left as it was."""
        if not archives:
            return []
        offset = self.described_length
        raw_before = self._index_raw
        disk = diskio.disk
        where, doing = self.data_path, "opening for appending"
        try:
            with disk.open(self.data_path, "ab") as f:
                if f.tell() != offset:  # only possible if someone wrote behind our back since open
                    raise CorruptFolder(f"archive folder {self.path}: data is {f.tell()} bytes, the index "
                                        f"describes {offset}; nothing was appended", code="data-changed")
                where, doing = self.pending_path, "recording the append in"
                atomic_write(self.pending_path, str(offset).encode())                              # 1
                where, doing = self.data_path, "appending archives to"
                new, order = self._write_archives(f, archives, offset)                             # 2
            merged = {**self.entries, **new}
            index = codec.encode_index(merged)
            wrapped = self.index_codec.wrap(index) if self.index_codec is not None else index
            if raw_before:
                where, doing = self.prev_path, "keeping the previous index as"
                atomic_write(self.prev_path, raw_before)                                           # 3
            where, doing = tmp_path_of(self.index_path), "writing the new index to"
            tmp = write_tmp(self.index_path, wrapped)                                              # 4
            where, doing = self.pending_path, "removing"
            disk.unlink(self.pending_path)                                                         # 5
            disk.fsync_dir(self.path)
            where, doing = self.index_path, "replacing"
            disk.replace(tmp, self.index_path)                                                     # 6
        except CorruptFolder:
            raise
        except BaseException as e:
            undone = self._undo_append(offset, raw_before)
            if isinstance(e, OSError):
                raise disk_error(e, where, doing, "the append was undone: data, index and torrent are as they "
                                 "were before this build" if undone else "the appended bytes could not be cut "
                                 "back yet; they are not indexed, and the next open of the folder cuts them") from None
            raise
        self.entries, self._index_raw = merged, wrapped
        try:
            disk.fsync_dir(self.path)
        except OSError as e:
            raise disk_error(e, self.path, "syncing the folder", "the new index is in place but may not survive "
                             "a power loss") from None
        return order

    def _write_archives(self, f, archives: Iterable[NewArchive], offset: int) -> tuple[dict, list[str]]:
        disk = diskio.disk
        new: dict[str, IndexEntry] = {}
        order: list[str] = []
        for a in archives:
            size, padding = codec.padded_size(len(a.raw))
            entry = IndexEntry(a.start, a.end, tuple(a.topics), offset, size, padding)
            disk.write(f, a.raw)
            disk.write(f, bytes(padding))
            aid = entry.archive_id
            new[aid] = entry
            order.append(aid)
            offset += size
        disk.fsync(f)
        return new, order

    def _undo_append(self, offset: int, raw_before: bytes | None) -> bool:
        """Cut back what a failed append wrote; True when done. Safe because the index on disk is still the one
        the append started from (checked): no index ever named those bytes. If the cut itself fails,
        `append.pending` (or, past step 5, the complete `index.tmp`) is left for the next open to finish."""
        try:
            if (self.index_path.read_bytes() if self.index_path.exists() else None) != raw_before:
                return False
            if self._data_len() > offset:
                diskio.disk.truncate(self.data_path, offset)
            for p in (self.pending_path, tmp_path_of(self.index_path)):
                discard(p)
            return True
        except OSError:
            return False
