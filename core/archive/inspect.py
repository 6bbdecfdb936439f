"""Open whatever support staff hand us (folder, index, data, .torrent) as a list of archives and messages."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE
from core.archive.errors import ArchiveError
from core.archive.torrent import Metainfo, parse_metainfo


@dataclass
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
    rows: list[ArchiveRow] = field(default_factory=list)

    def to_json(self) -> dict:
        out: dict = {"source": self.source, "kind": self.kind, "archives": [r.to_json() for r in self.rows]}
        if self.torrent:
            out["torrent"] = {"name": self.torrent.name, "infohash": self.torrent.infohash,
                              "magnet": self.torrent.magnet(), "pieces": self.torrent.num_pieces,
                              "files": [{"path": f.path, "length": f.length} for f in self.torrent.files]}
        return out

    def messages(self, archive_id: str) -> list[codec.ArchiveMessage]:
        if self.folder is None:
            raise ArchiveError("no data file to read messages from", code="data-missing")
        entries = codec.decode_index((self.folder / INDEX_FILE).read_bytes())
        e = entries[archive_id]
        with open(self.folder / DATA_FILE, "rb") as f:
            f.seek(e.offset)
            raw = f.read(e.raw_size)
        return codec.decode_archive(raw, archive_id=archive_id).messages


def _rows(folder: Path | None, index_raw: bytes) -> list[ArchiveRow]:
    entries = codec.decode_index(index_raw)
    data = folder / DATA_FILE if folder else None
    rows = []
    for aid, e in codec.sorted_entries(entries):
        row = ArchiveRow(aid, e.start, e.end, e.offset, e.size, e.padding, e.pieces)
        if data is not None and data.exists():
            try:
                with open(data, "rb") as f:
                    f.seek(e.offset)
                    raw = f.read(e.raw_size)
                if len(raw) < e.raw_size:
                    raise ArchiveError("archive runs past the end of data", code="index-past-data")
                row.messages = len(codec.decode_archive(raw, archive_id=aid).messages)
            except ArchiveError as err:
                row.error = f"{err.code}: {err}"
        rows.append(row)
    return rows


def inspect_path(source: str) -> Inspection:
    """Resolve `source` and list its archives. Raises ArchiveError (or FileNotFoundError) with a reason."""
    p = Path(source)
    if source.startswith("magnet:"):
        raise ArchiveError("a magnet link needs the network: use `archivist fetch` first, then inspect the folder",
                           code="needs-network")
    if not p.exists():
        raise FileNotFoundError(f"{source}: no such file or folder")
    if p.is_dir():
        return Inspection(source, "folder", p, None, _rows(p, (p / INDEX_FILE).read_bytes()))
    if p.suffix == ".torrent":
        mi = parse_metainfo(p.read_bytes())
        folder = next((c for c in (p.parent / mi.name, p.parent.parent / "archivedata" / mi.name)
                       if (c / INDEX_FILE).exists()), None)
        rows = _rows(folder, (folder / INDEX_FILE).read_bytes()) if folder else []
        return Inspection(source, "torrent", folder, mi, rows)
    if p.name == DATA_FILE:
        return Inspection(source, "folder", p.parent, None, _rows(p.parent, (p.parent / INDEX_FILE).read_bytes()))
    folder = p.parent if (p.parent / DATA_FILE).exists() else None
    return Inspection(source, "index", folder, None, _rows(folder, p.read_bytes()))
