"""What the control node can prove is archived: its windows and their verified archives (the retention proof).

A message may leave `waku_messages` only if it is in an archive read through one of these readers. Each reader
raises ArchiveError on any doubt, and the caller then keeps the whole window.
- Torrent: the index opens (with the community key when encrypted) and passes core.archive.index_check against
  `data`; the torrent we seed describes `data` as it is; each archive's bytes hash to that torrent's pieces (the
  bytes members get) and pass core.history_import.archive_from_blob (all there, zero padding, opens, decodes, same
  window as its entry), with the same topics as its entry and every message inside its window.
- Codex: the index passes core.codex.index.check_index; the local keep-alive copy hashes to the CID the index
  names, and opens, decodes and matches its entry.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core.archive.codec import DecodedArchive
from core.archive.constants import DATA_FILE, INDEX_FILE, PIECE_LENGTH
from core.archive.errors import ArchiveError

Reader = Callable[[str, object], DecodedArchive]


@dataclass
class ArchivedWindow:
    """One archived window [start, end) and the archives (30 MB chunks) that hold it."""

    start: int
    end: int
    parts: list = field(default_factory=list)          # [(archive ID, index entry)]


def _group(entries) -> list[ArchivedWindow]:
    by: dict[tuple[int, int], ArchivedWindow] = {}
    for aid, e in sorted(entries.items(), key=lambda kv: (kv[1].start, kv[0])):
        by.setdefault((e.start, e.end), ArchivedWindow(e.start, e.end)).parts.append((aid, e))
    return sorted(by.values(), key=lambda w: (w.start, w.end))


def torrent_windows(folder_path: Path, torrent: Path, community_id: str, index_codec, group_keys
                    ) -> tuple[list[ArchivedWindow], Reader | None]:
    """Raises ArchiveError (or OSError: no torrent) when the index or the torrent fails its check."""
    from core.archive.folder import ArchiveFolder
    from core.archive.index_check import check_entries, errors
    from core.archive.torrent import read_metainfo
    if not (folder_path / INDEX_FILE).exists():
        return [], None
    folder = ArchiveFolder(folder_path, recover=False, index_codec=index_codec)
    entries = dict(folder.entries)
    data_path = folder_path / DATA_FILE
    data_len = data_path.stat().st_size if data_path.exists() else 0
    bad = errors(check_entries(entries, data_len))
    if bad:
        raise ArchiveError(f"index fails its check: {bad[0].code}: {bad[0].message}", code=bad[0].code)
    mi = read_metainfo(torrent, expected_name=community_id)
    if mi.file_length(DATA_FILE) != data_len:
        raise ArchiveError(f"the torrent describes {mi.file_length(DATA_FILE)} bytes of data, data holds "
                           f"{data_len}", code="torrent-file-size")
    return _group(entries), lambda aid, e: read_torrent_archive(data_path, mi, aid, e, group_keys)


def read_torrent_archive(data_path: Path, mi, aid: str, e, group_keys) -> DecodedArchive:
    from core.history_import import archive_from_blob, seek_archive
    from core.status.archive_encryption import open_archive_bytes
    with open(data_path, "rb") as f:
        seek_archive(f, aid, e)
        blob = f.read(e.size)
    if len(blob) == e.size:
        for k, i in enumerate(e.pieces):        # the bytes members get: those the seeded torrent names
            if hashlib.sha1(blob[k * PIECE_LENGTH:(k + 1) * PIECE_LENGTH]).digest() != mi.piece_hash(i):
                raise ArchiveError(f"piece {i} of archive {aid} does not match the torrent", code="piece-mismatch",
                                   archive_id=aid)
    arch = archive_from_blob(aid, e, blob, lambda raw: open_archive_bytes(raw, group_keys, archive_id=aid))
    if tuple(arch.topics) != tuple(e.topics) or any(not e.start <= m.timestamp < e.end for m in arch.messages):
        raise ArchiveError(f"archive {aid} does not match its index entry", code="metadata-mismatch",
                           archive_id=aid)
    return arch


def codex_windows(owner, group_keys) -> tuple[list[ArchivedWindow], Reader]:
    from core.codex import index as cindex
    entries = dict(owner.entries)
    problems = cindex.check_index(entries)
    if problems:
        raise ArchiveError(f"Codex index fails its check: {problems[0].code}: {problems[0].message}",
                           code=problems[0].code)
    return _group(entries), lambda aid, e: read_codex_archive(owner, aid, e, group_keys)


def read_codex_archive(owner, aid: str, e, group_keys) -> DecodedArchive:
    from core.codex.backend import expected_cid
    from core.codex.index import decode_checked_archive
    from core.status.archive_encryption import open_archive_bytes
    blob = owner.dir / "blobs" / e.cid
    if not blob.exists():
        raise ArchiveError(f"no local copy of {e.cid} (archive {aid})", code="codex-copy-missing", archive_id=aid)
    raw = blob.read_bytes()
    if e.cid not in expected_cid(raw):
        raise ArchiveError(f"local copy of {e.cid} does not hash to that CID", code="codex-cid-mismatch",
                           archive_id=aid)
    return decode_checked_archive(aid, e, open_archive_bytes(raw, group_keys, archive_id=aid))
