"""Open whatever support staff hand us (folder, index, data, .torrent) as a list of archives and messages.

Everything here reads files from outside: sizes are checked against the file before anything is read
(`index_check.plan_reads`), an index is read once, and every fault is an ArchiveError with a code.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE, MAX_INDEX_BYTES
from core.archive.errors import ArchiveError
from core.archive.index_check import Finding, check_entries, plan_reads
from core.archive.torrent import Metainfo, is_magnet_link, read_metainfo


def size_text(n: int | None) -> str:
    """A byte count for people, in binary units (KiB, MiB, GiB): the one rule of the GUI, the command lines and the
    core's messages ("" for None)."""
    if n is None:
        return ""
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            return f"{int(v)} B" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"


def utc_text(t, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """A timestamp (seconds) as UTC text for people: the one rule of every listing (the CLIs, the GUI's tables,
    report and timeline). A timestamp from outside that no date can hold is shown as the number."""
    try:
        return time.strftime(fmt, time.gmtime(t))
    except (OverflowError, OSError, ValueError, TypeError):
        return str(t)

_SKIP_REASON = {
    "padding-exceeds-size": "its padding is larger than its size",
    "index-past-data": "it runs past the end of data",
    "size-absurd": "it is larger than any archive can be",
    "offset-overlap": "it overlaps an earlier archive",
}


class Unusable(ArchiveError):
    """The input cannot be used at all (exit 2): not an archive folder, no index beside a data file, ..."""

    code = "unusable-input"


@dataclass(slots=True)
class ArchiveRow:
    archive_id: str
    start: int
    end: int
    offset: int
    size: int
    padding: int
    pieces: range
    messages: int | None = None       # None when data is not available or the archive does not decode
    error: str | None = None

    def to_json(self) -> dict:
        return {"id": self.archive_id, "from": self.start, "to": self.end, "offset": self.offset,
                "size": self.size, "padding": self.padding, "first_piece": self.pieces.start,
                "pieces": len(self.pieces), "messages": self.messages, "error": self.error}


@dataclass
class Inspection:
    source: str
    kind: str                      # folder | index | torrent
    folder: Path | None = None
    torrent: Metainfo | None = None
    findings: list[Finding] = field(default_factory=list)      # index faults (index_check.check_entries)
    entries: dict[str, codec.IndexEntry] = field(default_factory=dict, repr=False)
    _errors: dict[str, str] | None = field(default=None, repr=False)
    _rows: list[ArchiveRow] | None = field(default=None, repr=False)   # None: one bare row per entry, not built

    @property
    def rows(self) -> list[ArchiveRow]:
        """One row per archive, in data order. Without a data file the rows say no more than `entries` (already
        in data order) and are built on first use: the CLI lists a 200k-entry index from `entries` instead."""
        if self._rows is None:
            self._rows = [ArchiveRow(aid, e.start, e.end, e.offset, e.size, e.padding, e.pieces)
                          for aid, e in codec.sorted_entries(self.entries)]
        return self._rows

    @rows.setter
    def rows(self, rows: list[ArchiveRow]) -> None:
        self._rows = rows

    @property
    def bare(self) -> bool:
        """The rows are not built and would only repeat `entries`: no messages counted, no read errors."""
        return self._rows is None

    @property
    def faulty(self) -> bool:
        """The index breaks a rule, or a listed archive could not be read or decoded."""
        return any(f.severity == "error" for f in self.findings) or any(r.error for r in self._rows or ())

    def to_json(self) -> dict:
        out: dict = {"source": self.source, "kind": self.kind, "archives": [r.to_json() for r in self.rows],
                     "findings": [{"code": f.code, "message": f.message, "archive_id": f.archive_id,
                                   "severity": f.severity} for f in self.findings]}
        if self.torrent:
            out["torrent"] = {"name": self.torrent.name, "infohash": self.torrent.infohash,
                              "magnet": self.torrent.magnet(), "pieces": self.torrent.num_pieces,
                              "files": [{"path": f.path, "length": f.length} for f in self.torrent.files]}
        return out

    def messages(self, archive_id: str) -> list[codec.ArchiveMessage]:
        """Decode one listed archive (raises ArchiveError: no data, unknown archive, or the row's fault)."""
        if self.folder is None or not (self.folder / DATA_FILE).is_file():
            raise ArchiveError("no data file to read messages from", code="data-missing")
        if archive_id not in self.entries:
            raise ArchiveError(f"{archive_id[:80]!r} is not in the index", code="archive-unknown")
        if self._errors is None:
            self._errors = {r.archive_id: r.error for r in self.rows if r.error}
        if archive_id in self._errors:     # not read when listed (overlap, past data...), not read now either
            err = self._errors[archive_id]
            raise ArchiveError(err, code=err.split(":", 1)[0], archive_id=archive_id)
        with open(self.folder / DATA_FILE, "rb") as f:
            raw = read_raw(f, self.entries[archive_id], archive_id)
        return codec.decode_archive(raw, archive_id=archive_id).messages


def read_bounded(path: Path, limit: int, what: str, code: str) -> bytes:
    """A file's bytes, refused (ArchiveError `code`) before reading if it is larger than `limit`."""
    size = path.stat().st_size
    if size > limit:
        raise ArchiveError(f"{what} {path} is {size} bytes, over the {limit}-byte limit", code=code)
    with open(path, "rb") as f:
        return f.read(limit + 1)


def read_index(path: Path) -> bytes:
    return read_bounded(path, MAX_INDEX_BYTES, "index", "index-too-big")


def read_raw(f: BinaryIO, e: codec.IndexEntry, archive_id: str | None = None) -> bytes:
    """The unpadded bytes of one archive, after checking (without reading) that they lie inside the file."""
    data_len = f.seek(0, 2)
    for _, _, skip in plan_reads({archive_id or e.archive_id: e}, data_len):
        if skip:
            raise ArchiveError(f"not read: {_SKIP_REASON[skip]}", code=skip, archive_id=archive_id)
    f.seek(e.offset)
    raw = f.read(e.raw_size)
    if len(raw) != e.raw_size:
        raise ArchiveError("data changed while it was read", code="index-past-data", archive_id=archive_id)
    return raw


def message_count(raw: bytes, archive_id: str) -> int:
    """Messages in an encoded archive, without building a Python object per message."""
    return len(codec.parse_archive_pb(raw, archive_id=archive_id).messages)


def _rows(folder: Path | None, index_raw: bytes, count_messages: bool = True) -> Inspection:
    entries = codec.decode_index(index_raw)
    data = folder / DATA_FILE if folder else None
    have_data = data is not None and data.is_file()
    data_len = data.stat().st_size if have_data else 0
    ins = Inspection("", "", folder, entries=entries)
    ins.findings = check_entries(entries, data_len if have_data else None)
    if not have_data:
        return ins                    # rows: built from entries when asked for (Inspection.rows)
    ins.rows = []
    with open(data, "rb") as f:
        for aid, e, skip in plan_reads(entries, data_len):
            row = ArchiveRow(aid, e.start, e.end, e.offset, e.size, e.padding, e.pieces)
            if skip:
                row.error = f"{skip}: not read, {_SKIP_REASON[skip]}"
            elif count_messages:
                f.seek(e.offset)
                try:
                    row.messages = message_count(f.read(e.raw_size), aid)
                except ArchiveError as err:
                    row.error = f"{err.code}: {err}"
            ins.rows.append(row)
    return ins


def beside_or_in_siblings(here: Path, name: str) -> list[Path]:
    """`here/name`, then `name` in each sibling folder of `here` (at most 1,000, in name order): where a torrent and
    its archive folder are looked for from each other (`<dir>/torrents/<id>.torrent` next to
    `<dir>/archivedata/<id>`, or side by side). Exact names only: no glob patterns."""
    out = [here / name]
    try:
        out += [d / name for d in sorted(here.parent.iterdir())[:1000] if d != here]
    except OSError:
        pass
    return out


def folder_for_torrent(torrent: Path, mi: Metainfo) -> Path | None:
    """The archive folder a torrent describes: named exactly like the torrent (its community ID), beside it, or in
    a sibling of the torrent's folder (beside_or_in_siblings)."""
    return next((c for c in beside_or_in_siblings(torrent.resolve().parent, mi.name)
                 if c.is_dir() and ((c / INDEX_FILE).is_file() or (c / DATA_FILE).is_file())), None)


def inspect_path(source: str, *, count_messages: bool = True) -> Inspection:
    """Resolve `source` and list its archives. Raises ArchiveError (Unusable when the input cannot be used at
    all) or OSError."""
    p = Path(source)
    if is_magnet_link(source):
        raise Unusable("a magnet link needs the network: use `archivist fetch` first, then inspect the folder",
                       code="needs-network")
    if not p.exists():
        raise Unusable(f"{source}: no such file or folder", code="not-found")
    if p.is_dir():
        if not (p / INDEX_FILE).is_file():
            if (p / DATA_FILE).is_file():
                raise ArchiveError(f"{p / INDEX_FILE} does not exist", code="index-missing")
            raise Unusable(f"{source} is not an archive folder (no index, no data)", code="not-an-archive")
        kind, folder, mi, index = "folder", p, None, p / INDEX_FILE
    elif p.suffix == ".torrent":
        mi = read_metainfo(p)
        folder = folder_for_torrent(p, mi)
        kind, index = "torrent", (folder / INDEX_FILE if folder else None)
        if index is not None and not index.is_file():
            index = None
    elif p.name == DATA_FILE:
        if not (p.parent / INDEX_FILE).is_file():
            raise ArchiveError(f"no index beside {source}: a data file cannot be read without its index",
                               code="index-missing")
        kind, folder, mi, index = "folder", p.parent, None, p.parent / INDEX_FILE
    else:
        folder = p.parent if p.name == INDEX_FILE and (p.parent / DATA_FILE).is_file() else None
        kind, mi, index = "index", None, p
    if index is not None:
        ins = _rows(folder, read_index(index), count_messages)
    else:
        ins = Inspection("", "", folder, _rows=[])
    ins.source, ins.kind, ins.torrent = source, kind, mi
    return ins
