"""What the Inspector does, without Qt: open any source, list its archives, verify it, and pin each fault
to an archive (and piece, byte) where possible. Runs on a worker thread; returns plain values."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE, PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.archive.index_check import plan_reads
from core.archive.inspect import ArchiveRow, Inspection, inspect_path, message_count, read_index, read_raw
from core.archive.torrent import Metainfo, is_magnet_link, piece_hashes, read_metainfo
from core.archive.verify import Finding, Report, verify_folder, verify_index_file
from core.torrent.magnet import MagnetError, parse_magnet


@dataclass
class InspectorResult:
    source: str
    kind: str                                   # folder | index | data | torrent | magnet | error
    folder: Path | None = None
    torrent: Metainfo | None = None
    rows: list[ArchiveRow] = field(default_factory=list)
    report: Report | None = None
    error: str | None = None                    # why the source could not be opened at all
    magnet: str | None = None
    decoded: dict = field(default_factory=dict)  # archive id -> messages already decoded (Codex: no local data)
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)   # finding index -> damaged data bytes
    not_archive: str | None = None              # one sentence when the source is not an archive at all
    inspection: Inspection | None = field(default=None, repr=False)   # the core listing the rows come from

    def messages(self, archive_id: str) -> list[codec.ArchiveMessage]:
        if archive_id in self.decoded:
            return self.decoded[archive_id]
        if self.inspection is not None and self.inspection.folder is not None:
            return self.inspection.messages(archive_id)     # core's rule: a row not read when listed is not read now
        if self.folder is None:
            raise ArchiveError("no data file to read this archive from", code="data-missing")
        return archive_messages(self.folder, archive_id)

    @property
    def faults(self) -> list[Finding]:
        return [f for f in (self.report.findings if self.report else []) if f.severity == "error"]

    def summary(self) -> str:
        from gui.report import headline
        return headline(self)


def pinpoint_pieces(mi: Metainfo, folder: Path, report: Report) -> dict[int, tuple[int, int]]:
    """Per archive, which pieces differ from the torrent's SHA-1s (the core check only counts them). Returns the
    damaged `data` byte range (first to last byte of the differing pieces) per finding added (by index)."""
    spans: dict[int, tuple[int, int]] = {}
    data, index = folder / DATA_FILE, folder / INDEX_FILE
    if not data.exists() or not index.exists():
        return spans
    if data.stat().st_size != mi.file_length(DATA_FILE):
        return spans  # core already reported torrent-file-size
    try:
        entries = codec.decode_index(read_index(index))
    except ArchiveError:
        return spans
    with open(data, "rb") as f:
        for aid, e, skip in plan_reads(entries, mi.file_length(DATA_FILE)):   # each byte read at most once
            if skip or e.offset % PIECE_LENGTH:
                continue
            f.seek(e.offset)
            got = piece_hashes([f.read(e.size)])
            bad = [p for k, p in enumerate(e.pieces) if got[20 * k:20 * k + 20] != mi.piece_hash(p)]
            if bad:
                first = bad[0]
                at = first * PIECE_LENGTH - e.offset
                report.add("piece-mismatch",
                           f"{len(bad)} of {len(e.pieces)} pieces differ from the torrent: piece {first} "
                           f"(archive byte {at}..{at + PIECE_LENGTH - 1}, data offset {first * PIECE_LENGTH})"
                           + _where(at, e.raw_size), aid)
                spans[len(report.findings) - 1] = (first * PIECE_LENGTH,
                                                   min((bad[-1] + 1) * PIECE_LENGTH, e.offset + e.size) - 1)
    return spans


def _is_cid(text: str) -> bool:
    from core.codex.cid import is_cid
    return is_cid(text)


def _where(at: int, raw_size: int) -> str:
    if at >= raw_size:
        return "; the damage is inside the padding"
    if at + PIECE_LENGTH > raw_size:
        return f"; this piece holds the archive's last message bytes (up to {raw_size}) and its padding"
    return "; the archive's message bytes were altered"


def open_codex(cid: str, api_url: str | None, timeout: float = 30.0) -> InspectorResult:
    """A Codex index CID: fetch the index and every archive from the node, check each against its CID and the
    index, and pin every fault to its archive."""
    from core.codex import index as cindex
    from core.codex.backend import checked_download, verify_archive_blob
    from core.codex.client import CodexClient
    from core.codex.errors import CodexError
    res = InspectorResult(cid, "codex", report=Report(cid))
    rep = res.report
    with CodexClient(api_url, read_timeout=timeout, download_deadline=max(60.0, timeout * 4)) as client:
        try:
            raw = checked_download(client, cid)
        except CodexError as e:
            res.error = f"{e.code}: {e}"
            rep.add(e.code, f"index {cid} could not be fetched from {client.base_url}: {e}")
            return res
        try:
            entries = cindex.decode_index(raw)
        except (ArchiveError, ValueError) as e:
            rep.add("index-undecodable", f"Codex index does not decode: {e}")
            return res
        for p in cindex.check_index(entries):
            rep.add(p.code, p.message, p.archive_id)
        rep.archives = len(entries)
        for aid, e in sorted(entries.items(), key=lambda kv: (kv[1].start, kv[0])):
            row = ArchiveRow(aid, e.start, e.end, 0, 0, 0, range(0))
            try:
                blob = checked_download(client, e.cid)
                row.size = len(blob)
                msgs = verify_archive_blob(aid, e, blob).messages
            except CodexError as err:
                row.error = f"{err.code}: {err}"
                rep.add(err.code, f"archive CID {e.cid}: {err}", aid)
            else:
                row.messages = len(msgs)
                res.decoded[aid] = msgs
                rep.messages += len(msgs)
            res.rows.append(row)
    return res


class MagnetFetcher:
    """The Inspector's own BitTorrent session, started on first use (on a worker thread). Never the engine's:
    there a fetch would supersede the member's own download of the same community."""

    def __init__(self, root: Path, settings=None, timeout: float = 120.0):
        import threading
        self.root, self.settings, self.timeout = Path(root), settings, timeout
        self.service = None
        self._lock = threading.Lock()

    def _session(self):
        with self._lock:
            if self.service is None:
                from core.torrent.service import TorrentService
                from core.torrent.settings import TorrentSettings
                self.service = TorrentService(self.settings or TorrentSettings(), self.root / "torrent-state").start()
            return self.service

    def fetch(self, link: str) -> tuple[Path | None, dict]:
        """Download the whole torrent (archives are small) into a scratch folder: (folder or None, job snapshot)."""
        from core.torrent.selection import Selection
        m = parse_magnet(link)
        dest = self.root / m.infohash
        dest.mkdir(parents=True, exist_ok=True)
        job = self._session().fetch(link, dest, Selection("all"), peers=m.peers)
        if not job.wait(self.timeout):
            job.cancel()
        snap = job.snapshot()
        folder = dest / (job.community_id or m.name)
        return (folder if snap["state"] == "complete" else None), snap

    def close(self) -> None:
        with self._lock:
            if self.service is not None:
                self.service.close()
                self.service = None


def open_source(source: str, torrent: str | None = None, codex_api: str | None = None,
                fetcher: MagnetFetcher | None = None) -> InspectorResult:
    """Open a folder, `index`, `data`, `.torrent`, magnet link or Codex index CID; verify what can be verified."""
    source = source.strip()
    if is_magnet_link(source) and fetcher is not None:
        try:
            parse_magnet(source, need_community=True)
        except MagnetError as e:
            return InspectorResult(source, "error", error=str(e))
        folder, snap = fetcher.fetch(source)
        if folder is None:
            res = InspectorResult(source, "magnet", report=Report(source), magnet=source,
                                  error=f"{snap.get('code') or snap['state']}: {snap.get('message') or ''}")
            res.report.add(snap.get("code") or "fetch-failed",
                           f"the torrent could not be fetched ({snap['state']}, {snap.get('peers', 0)} peers): "
                           f"{snap.get('message') or 'no peer answered in time'}")
            return res
        res = open_source(str(folder))
        res.kind, res.magnet, res.source = "magnet", source, source
        return res
    if source.startswith("codex:") or (not Path(source).exists() and _is_cid(source)):
        return open_codex(source.removeprefix("codex:"), codex_api)
    if is_magnet_link(source):
        try:
            m = parse_magnet(source)
        except MagnetError as e:
            return InspectorResult(source, "error", error=str(e))
        rep = Report(source)
        rep.add("needs-network", f"magnet {m.infohash} ({m.name or 'no name'}, {len(m.trackers)} trackers): the archives must "
                "be fetched first (member view, or `archivist fetch`), then the folder can be inspected", severity="info")
        return InspectorResult(source, "magnet", report=rep, magnet=source)
    p = Path(source)
    if not p.exists():
        return InspectorResult(source, "error", error="no such file or folder")
    res = InspectorResult(source, "folder")
    try:
        ins = inspect_path(source, count_messages=False)    # counted by the verify pass below
        res.kind, res.folder, res.torrent, res.rows, res.inspection = ins.kind, ins.folder, ins.torrent, ins.rows, ins
        if p.name == DATA_FILE:
            res.kind = "data"
    except (ArchiveError, OSError) as e:
        res.error = f"{getattr(e, 'code', 'error')}: {e}"
        if p.is_dir() and not (p / INDEX_FILE).exists() and not (p / DATA_FILE).exists():
            return _not_archive(res, f"{p.name or source} is not an archive folder: it holds no index and no data "
                                "file.")
        if p.is_dir():
            res.folder = p
        elif p.name == DATA_FILE and not (p.parent / INDEX_FILE).exists():
            res.kind, res.report = "data", Report(source)
            res.report.add("index-missing", f"no index beside {p}: a data file cannot be read without its index")
            return res
        elif p.name in (DATA_FILE, INDEX_FILE) and (p.parent / INDEX_FILE).exists():
            res.folder = p.parent
        elif p.suffix == ".torrent":
            res.kind = "torrent"
            rep = Report(source)
            rep.add(getattr(e, "code", "torrent-undecodable"), str(e))
            res.report = rep
            return res
    tpath = Path(torrent) if torrent else (p if p.suffix == ".torrent" else None)
    if res.folder is not None and (res.folder / INDEX_FILE).exists():
        try:   # the core verifier finds the torrent (only one whose name and file lengths match) and checks it
            res.report = verify_folder(res.folder, tpath, discover=tpath is None)
            _rows_from_report(res.rows, res.report)
            if res.report.torrent is not None:
                if res.torrent is None:
                    res.torrent = read_metainfo(res.report.torrent)
                res.spans = pinpoint_pieces(res.torrent, res.folder, res.report)
        except (ArchiveError, OSError) as e:
            res.error = f"{getattr(e, 'code', 'unreadable')}: {e}"
    elif p.is_file() and p.suffix != ".torrent":
        res.kind = "index"
        try:   # an index on its own: says that archives and pieces were not checked
            res.report = verify_index_file(p)
        except OSError as e:
            res.report = Report(source)
            res.report.add("unreadable", str(e))
        broken = {f.code for f in res.report.findings} & {"index-undecodable", "index-too-big"}
        if p.name != INDEX_FILE and (broken or res.report.archives == 0):
            return _not_archive(res, f"{p.name} is not an archive: it is neither an archive folder's index or data "
                                "file nor a torrent.")
    elif res.torrent is not None:
        res.report = Report(source)
        res.report.add("data-missing", f"no folder named {res.torrent.name} beside the torrent: only the torrent's "
                       "own fields could be checked", severity="warning")
    return res


def _rows_from_report(rows: list[ArchiveRow], report: Report) -> None:
    """Each read row's message count, or why it does not parse, from the verify pass over the same data (rows
    that were not read already say why)."""
    for row in rows:
        if row.error is None:
            row.messages = report.counts.get(row.archive_id)
            row.error = report.unparsed.get(row.archive_id)


def _not_archive(res: InspectorResult, sentence: str) -> InspectorResult:
    res.kind, res.report, res.rows, res.folder = "not-archive", None, [], None
    res.not_archive = res.error = sentence
    return res


def message_counts(folder: Path, only: set[str] | None = None) -> dict[str, int]:
    """Messages per archive of a folder (decoded on a worker thread; archives that do not decode are left out)."""
    out: dict[str, int] = {}
    entries = codec.decode_index(read_index(folder / INDEX_FILE))
    with open(folder / DATA_FILE, "rb") as f:
        for aid, e, skip in plan_reads(entries, f.seek(0, 2)):
            if skip or (only is not None and aid not in only):
                continue
            f.seek(e.offset)
            try:
                out[aid] = message_count(f.read(e.raw_size), aid)
            except ArchiveError:
                continue
    return out


def archive_messages(folder: Path, archive_id: str) -> list[codec.ArchiveMessage]:
    """Decode one archive's messages (raises ArchiveError with a reason)."""
    entries = codec.decode_index(read_index(folder / INDEX_FILE))
    if archive_id not in entries:
        raise ArchiveError(f"{archive_id} is not in the index", code="archive-unknown")
    if not (folder / DATA_FILE).is_file():
        raise ArchiveError(f"no data file in {folder}", code="data-missing", archive_id=archive_id)
    with open(folder / DATA_FILE, "rb") as f:
        raw = read_raw(f, entries[archive_id], archive_id)   # checked against the file before reading
    return codec.decode_archive(raw, archive_id=archive_id).messages


from gui.models import payload_preview  # noqa: E402,F401  (re-exported)
