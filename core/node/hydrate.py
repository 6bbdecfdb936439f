"""The single-process import of archives into the member history, as the member node and `archivist import` run it.

The rules (whole windows, one transaction per window, never delete) are core/history_import.py's; the Spark hydrate
job follows the same ones and writes the same rows.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from core.archive.codec import IndexEntry
from core.archive.constants import DATA_FILE
from core.history_import import ArchiveOpener, WindowImport, read_window_rows
from core.storage.member_history import MemberHistory


def window_import(chosen: Mapping[str, IndexEntry]) -> WindowImport:
    """The archives of ONE window (what MemberNode hands a hydrator) as a WindowImport."""
    windows = {(e.start, e.end) for e in chosen.values()}
    if len(windows) != 1:
        raise ValueError(f"a hydrator call takes the archives of one window, got {len(windows)} windows")
    (start, end), = windows
    return WindowImport(start, end, tuple(sorted(chosen, key=lambda a: (chosen[a].offset, a))))


def reference_hydrator(history: MemberHistory, unwrap: ArchiveOpener | None = None):
    """hydrator(community_id, folder, {id: entry of one window}) -> rows written, in one transaction.

    `unwrap` opens encrypted archives (raises KeyMissing when the key is not held)."""
    def hydrate(cid: str, folder: Path, chosen: Mapping[str, IndexEntry]) -> int:
        w = window_import(chosen)
        rows = read_window_rows(Path(folder) / DATA_FILE, cid, chosen, w, unwrap)
        return history.import_window(cid, w.start, w.end, rows, w.archive_ids)
    hydrate.imported = history.imported_archive_ids     # the member's record of what is imported (core.node.member)
    return hydrate
