"""Check every invariant of an archive folder (and its torrent) and say exactly what is wrong.

Each Finding has a stable `code`, the archive it concerns (if any) and a sentence. A folder is good when
there are no findings of severity "error".
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE, PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.archive.index_check import Finding, check_entries
from core.archive.torrent import Metainfo, parse_metainfo, piece_hashes

MAX_VERIFY_READ = 64 * 1024 * 1024  # decode archives one at a time; never load more than this for one archive


@dataclass
class Report:
    path: str
    archives: int = 0
    messages: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def add(self, code: str, message: str, archive_id: str | None = None, severity: str = "error") -> None:
        self.findings.append(Finding(code, message, archive_id, severity))

    def to_json(self) -> dict:
        return {"path": self.path, "ok": self.ok, "archives": self.archives, "messages": self.messages,
                "findings": [asdict(f) for f in self.findings]}


def verify_index_bytes(raw: bytes, report: Report, data_len: int | None = None) -> dict[str, codec.IndexEntry]:
    """Index-level invariants: decodes, keys are Keccak of entries, windows, sizes, contiguous offsets."""
    try:
        entries = codec.decode_index(raw)
    except ArchiveError as e:
        report.add(e.code, str(e))
        return {}
    report.archives = len(entries)
    report.findings.extend(check_entries(entries, data_len))
    return entries


def verify_archive_bytes(aid: str, e: codec.IndexEntry, blob: bytes, report: Report) -> None:
    """Archive-level invariants for the bytes data[offset : offset+size]."""
    raw, pad = blob[:e.raw_size], blob[e.raw_size:]
    if pad.count(0) != len(pad):
        report.add("padding-nonzero", f"padding of {len(pad)} bytes holds non-zero bytes", aid)
    try:
        arch = codec.decode_archive(raw, archive_id=aid)
    except ArchiveError as err:
        report.add(err.code, str(err), aid)
        return
    if (arch.start, arch.end) != (e.start, e.end) or arch.topics != e.topics:
        report.add("metadata-mismatch", f"archive says [{arch.start}, {arch.end}) over {len(arch.topics)} topics, "
                   f"index says [{e.start}, {e.end}) over {len(e.topics)}", aid)
    outside = [m for m in arch.messages if not e.start <= m.timestamp < e.end]
    if outside:
        report.add("message-outside-window", f"{len(outside)} messages lie outside [{e.start}, {e.end})", aid)
    report.messages += len(arch.messages)


def verify_torrent(mi: Metainfo, folder: Path, report: Report) -> None:
    data, index = folder / DATA_FILE, folder / INDEX_FILE
    if mi.name != folder.name:
        report.add("torrent-bad-name", f"torrent name {mi.name} differs from folder {folder.name}")
    for f, p in ((DATA_FILE, data), (INDEX_FILE, index)):
        have = p.stat().st_size if p.exists() else -1
        if have != mi.file_length(f):
            report.add("torrent-file-size", f"torrent says {f} is {mi.file_length(f)} bytes, file has {have}")
            return

    def chunks():
        for p in (data, index):
            with open(p, "rb") as fh:
                while b := fh.read(64 * PIECE_LENGTH):
                    yield b
    actual = piece_hashes(chunks())
    bad = [i for i in range(mi.num_pieces) if actual[20 * i:20 * i + 20] != mi.piece_hash(i)]
    if bad:
        report.add("torrent-piece-mismatch", f"{len(bad)} pieces do not match data || index "
                   f"(first: piece {bad[0]} at byte {bad[0] * PIECE_LENGTH})")


def verify_folder(folder: Path | str, torrent: Path | str | None = None) -> Report:
    """Verify `<folder>/{data,index}` and, if given (or found beside), the torrent."""
    folder = Path(folder)
    report = Report(str(folder))
    data, index = folder / DATA_FILE, folder / INDEX_FILE
    if not index.exists():
        report.add("index-missing", f"{index} does not exist")
        return report
    data_len = data.stat().st_size if data.exists() else 0
    if not data.exists():
        report.add("data-missing", f"{data} does not exist")
    entries = verify_index_bytes(index.read_bytes(), report, data_len)
    if data.exists():
        with open(data, "rb") as f:
            for aid, e in codec.sorted_entries(entries):
                if e.offset + e.size > data_len or e.size > MAX_VERIFY_READ:
                    if e.size > MAX_VERIFY_READ:
                        report.add("size-absurd", f"size {e.size} is larger than any archive can be", aid)
                    continue
                f.seek(e.offset)
                verify_archive_bytes(aid, e, f.read(e.size), report)
    if torrent is not None:
        try:
            mi = parse_metainfo(Path(torrent).read_bytes())
        except ArchiveError as err:
            report.add(err.code, str(err))
        else:
            verify_torrent(mi, folder, report)
    return report


def verify_index_file(index: Path | str) -> Report:
    """Verify an index on its own; if a `data` file sits beside it, verify the whole folder."""
    index = Path(index)
    if (index.parent / DATA_FILE).exists():
        return verify_folder(index.parent)
    report = Report(str(index))
    verify_index_bytes(index.read_bytes(), report)
    return report
