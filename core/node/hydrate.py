"""Single-process reference import of archives into the member history (the Spark hydrate job writes the same
rows: both build them with core.pipeline.unwrap and core.storage.history's column order)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.constants import DATA_FILE
from core.archive.errors import ArchiveError
from core.pipeline.unwrap import status_unwrap
from core.storage.member_history import MemberHistory


def history_row(cid: str, m: ArchiveMessage, archive_id: str | None, unwrap=status_unwrap) -> tuple:
    """One `history_messages` row (core.storage.history.COLUMNS order)."""
    u = unwrap(m.payload)
    if u is None:      # not a Status message we can open: keep its place and raw payload
        return (cid, m.hash, m.timestamp, m.topic, m.sig or None, None, None, None, None, None, m.payload, archive_id)
    return (cid, m.hash, m.timestamp, m.topic, u.author or m.sig or None, u.chat_id, u.clock, u.message_id,
            u.message_type, u.text, m.payload, archive_id)


def read_archive(folder: Path, aid: str, e: IndexEntry, unwrap=None) -> codec.DecodedArchive:
    with open(Path(folder) / DATA_FILE, "rb") as f:
        f.seek(e.offset)
        raw = f.read(e.raw_size)
    if len(raw) < e.raw_size:
        raise ArchiveError(f"archive {aid} is not fully downloaded", code="archive-incomplete", archive_id=aid)
    if unwrap is not None:
        raw = unwrap(raw)
    return codec.decode_archive(raw, archive_id=aid)


def reference_hydrator(history: MemberHistory, unwrap=None):
    """hydrator(community_id, folder, {id: entry}) for MemberNode: one transaction per 7-day window.

    A window cut into several 30 MB chunks is several archives with the same [from, to): they replace the window
    together, or the second chunk would delete the first one's messages. `unwrap` opens encrypted archives."""
    def hydrate(cid: str, folder: Path, chosen: Mapping[str, IndexEntry]) -> int:
        windows: dict[tuple[int, int], list[tuple[str, IndexEntry]]] = {}
        for aid, e in sorted(chosen.items(), key=lambda kv: kv[1].offset):
            windows.setdefault((e.start, e.end), []).append((aid, e))
        n = 0
        for (start, end), parts in windows.items():
            rows = [history_row(cid, m, aid) for aid, e in parts for m in read_archive(folder, aid, e, unwrap).messages]
            n += history.replace_range(cid, start, end, rows, [aid for aid, _ in parts])
        return n
    return hydrate
