"""Download progress in the member's view: the overall bar's words (bytes, rate, time left where known) and a
progress bar drawn in the archive table's "Progress" column, both from the engine's snapshot
(CommunityState.download, refreshed about once a second)."""
from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionProgressBar

from core.node.state import ArchiveInfo, CommunityState, DownloadProgress
from gui.models import SORT_ROLE, fmt_bytes


def fmt_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def download_text(d: DownloadProgress) -> str:
    """"3.1 MiB of 8.0 MiB · 1.2 MiB/s · 4 s left" (the rate and time left only once measured)."""
    parts = [f"{fmt_bytes(d.bytes_done)} of {fmt_bytes(d.bytes_wanted)}"]
    if d.state == "metadata" or (not d.bytes_wanted and d.state not in ("complete", "seeding")):
        return "fetching the archive index from peers…"
    if d.rate is not None:
        parts.append(f"{fmt_bytes(int(d.rate))}/s")
    if d.bytes_wanted and d.bytes_done >= d.bytes_wanted:
        parts.append("downloaded")
    elif d.eta is not None:
        parts.append(f"{fmt_duration(d.eta)} left")
    else:
        parts.append("time left unknown")
    return " · ".join(parts)


def overall(c: CommunityState, wanted: set[str]) -> tuple[int, int, str]:
    """(done, total, text) of the overall download bar: the running job's bytes, else the chosen archives held."""
    if c.download is not None:
        return c.download.bytes_done, c.download.bytes_wanted, download_text(c.download)
    chosen = [a for a in c.archives if a.archive_id in wanted]
    if not chosen:
        return 0, 0, "nothing chosen to download"
    total = sum(a.size for a in chosen)
    held = sum(a.size for a in chosen if a.local or a.imported)
    return held, total, f"{fmt_bytes(held)} of {fmt_bytes(total)} downloaded"


def archive_percent(a: ArchiveInfo, c: CommunityState | None) -> int | None:
    """0..100 for an archive being or already downloaded, None when it is not part of a download."""
    if a.local or a.imported:
        return 100
    if c is not None and c.download is not None:
        for aid, done, size in c.download.archives:
            if aid == a.archive_id:
                return int(100 * done / size) if size else 100
    return None


class ProgressDelegate(QStyledItemDelegate):
    """Draws the column's value (0..100, SORT_ROLE) as a progress bar; nothing for None."""

    def paint(self, painter, option, index: QModelIndex) -> None:
        value = index.data(SORT_ROLE)
        if value is None or value < 0:          # the model gives -1 for None (sorting)
            super().paint(painter, option, index)
            return
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum, bar.maximum, bar.progress = 0, 100, int(value)
        bar.text = f"{int(value)}%"
        bar.textVisible = True
        bar.textAlignment = Qt.AlignmentFlag.AlignCenter
        bar.state = option.state
        style = option.widget.style() if option.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter, option.widget)
