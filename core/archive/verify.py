"""Check every invariant of an archive folder (and its torrent) and say exactly what is wrong.

Each Finding has a stable `code`, the archive it concerns (if any) and a sentence. A folder is good when there
are no findings of severity "error"; `strict` also fails on warnings. Without a matching torrent every archive is
still decoded and checked, but altered message bytes that still decode can only be caught by piece hashes: the
report then says `pieces-unchecked` rather than pretending. Index rules live in index_check (one copy).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE, PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.archive.index_check import MAX_ARCHIVE_BYTES, Finding, check_entries, plan_reads
from core.archive.constants import COMMUNITY_ID
from core.archive.inspect import beside_or_in_siblings, read_index
from core.archive.torrent import Metainfo, piece_hashes, read_metainfo

MAX_VERIFY_READ = MAX_ARCHIVE_BYTES  # decode archives one at a time; never load more than this for one archive
HASH_BYTES = 32                      # every archived WakuMessage carries its 32-byte Waku message hash


@dataclass
class Report:
    path: str
    archives: int = 0
    messages: int = 0
    findings: list[Finding] = field(default_factory=list)
    torrent: str | None = None       # the torrent whose piece hashes were checked (None: they were not)
    # per archive read: its message count, or why it does not parse ("code: sentence"); the Inspector's rows
    # come from here, so that opening a folder parses each archive once
    counts: dict[str, int] = field(default_factory=dict, repr=False)
    unparsed: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def passed(self, strict: bool = False) -> bool:
        return self.ok and not (strict and self.warnings)

    def add(self, code: str, message: str, archive_id: str | None = None, severity: str = "error") -> None:
        self.findings.append(Finding(code, message, archive_id, severity))

    def to_json(self, strict: bool = False) -> dict:
        return {"path": self.path, "ok": self.passed(strict), "strict": strict, "archives": self.archives,
                "messages": self.messages, "pieces_checked": self.torrent is not None, "torrent": self.torrent,
                "findings": [asdict(f) for f in self.findings]}


def verify_index_bytes(raw: bytes, report: Report, data_len: int | None = None) -> dict[str, codec.IndexEntry]:
    """Index-level invariants (index_check.check_entries) of an index's bytes."""
    try:
        entries = codec.decode_index(raw)
    except ArchiveError as e:
        report.add(e.code, str(e))
        return {}
    report.archives = len(entries)
    report.findings.extend(check_entries(entries, data_len))
    return entries


def verify_archive_bytes(aid: str, e: codec.IndexEntry, blob: bytes, report: Report) -> None:
    """Archive-level invariants for the bytes data[offset : offset+size]: zero padding, decodes, metadata as in
    the index, at least one message, each message with a 32-byte hash and a timestamp inside the window."""
    if not 0 <= e.raw_size <= len(blob):
        report.add("padding-exceeds-size", f"padding {e.padding} does not fit in {len(blob)} bytes", aid)
        return
    raw, pad = blob[:e.raw_size], blob[e.raw_size:]
    if pad.count(0) != len(pad):
        report.add("padding-nonzero", f"padding of {len(pad)} bytes holds non-zero bytes", aid)
    try:
        arch = codec.parse_archive_pb(raw, archive_id=aid)
    except ArchiveError as err:
        report.add(err.code, str(err), aid)
        report.unparsed[aid] = f"{err.code}: {err}"
        return
    md = arch.metadata
    start, end, topics = getattr(md, "from"), md.to, tuple(md.contentTopic)
    if (start, end) != (e.start, e.end) or topics != e.topics:
        report.add("metadata-mismatch", f"archive says [{start}, {end}) over {len(topics)} topics, "
                   f"index says [{e.start}, {e.end}) over {len(e.topics)}", aid)
    n = report.counts[aid] = len(arch.messages)
    if n == 0:
        report.add("archive-empty", "archive holds no message (builders never write an empty archive)", aid)
    bad_hash = outside = 0
    lo, hi = e.start, e.end
    for m in arch.messages:
        if len(m.hash) != HASH_BYTES:
            bad_hash += 1
        if not lo <= m.timestamp < hi:
            outside += 1
    if bad_hash:
        report.add("message-bad-hash", f"{bad_hash} of {n} messages have no {HASH_BYTES}-byte message hash", aid)
    if outside:
        report.add("message-outside-window", f"{outside} messages lie outside [{e.start}, {e.end})", aid)
    report.messages += n


def torrent_mismatch(mi: Metainfo, folder: Path) -> tuple[str, str] | None:
    """(code, reason) why `mi` is not this folder's torrent, or None: its name must be the folder's community ID
    and its files data and index must have the lengths of the files on disk."""
    name = folder.resolve().name
    if not COMMUNITY_ID.match(name):
        return ("torrent-bad-name", f"folder name {name[:80]!r} is not a community ID, so no torrent can be matched "
                "to it (name the folder after the community)")
    if mi.name != name:
        return "torrent-bad-name", f"torrent is for {mi.name[:80]!r}, not for this folder {name}"
    for f in (DATA_FILE, INDEX_FILE):
        p = folder / f
        have = p.stat().st_size if p.is_file() else -1
        if have != mi.file_length(f):
            return "torrent-file-size", f"torrent says {f} is {mi.file_length(f)} bytes, the file has {have}"
    return None


def find_torrents(folder: Path) -> list[Path]:
    """Torrent files named exactly `<folder name>.torrent` beside the folder or in a sibling of its parent
    (`<dir>/torrents/<id>.torrent` for `<dir>/archivedata/<id>`). Exact names only: no glob patterns."""
    folder = folder.resolve()
    if not COMMUNITY_ID.match(folder.name):
        return []
    return [p for p in beside_or_in_siblings(folder.parent, folder.name + ".torrent") if p.is_file()]


def check_pieces(mi: Metainfo, folder: Path, report: Report) -> None:
    """SHA-1 of every piece of data || index against the torrent (lengths already match)."""
    def chunks():
        for p in (folder / DATA_FILE, folder / INDEX_FILE):
            with open(p, "rb") as fh:
                while b := fh.read(64 * PIECE_LENGTH):
                    yield b
    actual = piece_hashes(chunks())
    bad = [i for i in range(mi.num_pieces) if actual[20 * i:20 * i + 20] != mi.piece_hash(i)]
    if bad:
        report.add("torrent-piece-mismatch", f"{len(bad)} pieces do not match data || index "
                   f"(first: piece {bad[0]} at byte {bad[0] * PIECE_LENGTH})")


def verify_torrent(mi: Metainfo, folder: Path, report: Report, source: str = "", explicit: bool = True) -> bool:
    """Check the piece hashes if `mi` is this folder's torrent; else report why not (an error when the torrent
    was given, a warning when it was only found nearby). True when the pieces were checked."""
    why = torrent_mismatch(mi, folder)
    if why is not None:
        if explicit:
            report.add(why[0], why[1])
        else:
            report.add("torrent-not-used", f"found {source} but did not use it: {why[1]}", severity="warning")
        return False
    check_pieces(mi, folder, report)
    report.torrent = source or mi.name
    return True


def _use_torrent(folder: Path, report: Report, torrent: Path | str | None, discover: bool) -> None:
    if torrent is not None:
        try:
            mi = read_metainfo(Path(torrent))
        except ArchiveError as err:
            report.add(err.code, f"{torrent}: {err}")
        else:
            verify_torrent(mi, folder, report, str(torrent), explicit=True)
    elif discover:
        for cand in find_torrents(folder):
            try:
                mi = read_metainfo(cand)
            except (ArchiveError, OSError) as err:
                report.add("torrent-not-used", f"found {cand} but did not use it: "
                           f"{getattr(err, 'code', 'unreadable')}: {err}", severity="warning")
                continue
            if verify_torrent(mi, folder, report, str(cand), explicit=False):
                break
    if report.torrent is None:
        how = "the torrent given was not usable" if torrent is not None else (
            "no matching torrent was found" if discover else "no torrent was given")
        report.add("pieces-unchecked", f"piece hashes were NOT checked ({how}): every archive was decoded and "
                   "checked, but message bytes altered without breaking the encoding cannot be detected; "
                   "pass --torrent <community ID>.torrent", severity="warning")


def verify_folder(folder: Path | str, torrent: Path | str | None = None, *, discover: bool = False) -> Report:
    """Verify `<folder>/{data,index}` and its torrent: `torrent` if given, else (with `discover`) one named after
    the folder nearby that matches it. Raises OSError only if a file exists but cannot be read."""
    folder = Path(folder)
    report = Report(str(folder))
    data, index = folder / DATA_FILE, folder / INDEX_FILE
    if not index.is_file():
        report.add("index-missing", f"{index} does not exist")
        return report
    have_data = data.is_file()
    data_len = data.stat().st_size if have_data else 0
    if not have_data:
        report.add("data-missing", f"{data} does not exist")
    try:
        raw = read_index(index)
    except ArchiveError as err:
        report.add(err.code, str(err))
        return report
    entries = verify_index_bytes(raw, report, data_len)
    if have_data:
        with open(data, "rb") as f:
            for aid, e, skip in plan_reads(entries, data_len):
                if skip == "size-absurd":
                    report.add("size-absurd", f"size {e.size} is larger than any archive can be", aid)
                if skip is None:   # the other reasons are index faults check_entries already reported
                    f.seek(e.offset)
                    verify_archive_bytes(aid, e, f.read(e.size), report)
    _use_torrent(folder, report, torrent, discover)
    return report


def verify_index_file(index: Path | str, torrent: Path | str | None = None, *, discover: bool = False) -> Report:
    """Verify an index on its own; if it is a folder's `index` (or `data`) with both files, the whole folder."""
    index = Path(index)
    if index.name == DATA_FILE or (index.name == INDEX_FILE and (index.parent / DATA_FILE).is_file()):
        return verify_folder(index.parent, torrent, discover=discover)
    report = Report(str(index))
    try:
        raw = read_index(index)
    except ArchiveError as err:
        report.add(err.code, str(err))
        return report
    verify_index_bytes(raw, report)
    report.add("archives-unchecked", "no data file beside this index: only the index itself was checked",
               severity="warning")
    report.add("pieces-unchecked", "piece hashes were NOT checked (no data file)", severity="warning")
    return report
