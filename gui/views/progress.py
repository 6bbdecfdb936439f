"""Download progress in the member's view: the overall bar's words (bytes, rate, time left where known) and a
progress bar drawn in the archive table's "Progress" column, both from the engine's snapshot
(CommunityState.download, refreshed about once a second).

`SmoothBar` is the QProgressBar every view uses: QProgressBar.setValue repaints the bar at once, on the caller's
stack (13-26 ms per progress event offscreen, measured during the demo); a SmoothBar shows the latest value at most
once per PAINT_MS, through an ordinary (queued) update, and never paints inside a setter."""
from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, QTimer
from PySide6.QtWidgets import (QApplication, QProgressBar, QStyle, QStyledItemDelegate, QStyleOptionProgressBar,
                               QWidget)

from core.node.state import ArchiveInfo, CommunityState, DownloadProgress
from gui.models import SORT_ROLE, fmt_bytes


PAINT_MS = 100      # a SmoothBar shows a new value at most this often


class SmoothBar(QProgressBar):
    """A QProgressBar whose setters only record what to show (latest wins); the bar takes it on at once when it has
    not changed for PAINT_MS, else at the end of that interval. The getters (value, minimum, maximum, format, text)
    answer with the latest values at once, with QProgressBar's own rules (a hidden QProgressBar holds them)."""

    def __init__(self, parent: QWidget | None = None, interval_ms: int = PAINT_MS):
        super().__init__(parent)
        self.latest = QProgressBar(self)       # never shown: a hidden widget never paints
        self.latest.hide()
        self.shown_changes = 0                 # how often the bar took on new values (tests count them)
        self._dirty = False
        self._timer = QTimer(self, singleShot=True, interval=interval_ms)
        self._timer.timeout.connect(self._interval_over)

    # -- setters: record, then show when the interval allows ------------------------------------------------
    def setValue(self, value: int) -> None:
        self.latest.setValue(value)
        self._changed()

    def setRange(self, minimum: int, maximum: int) -> None:
        self.latest.setRange(minimum, maximum)
        self._changed()

    def setMinimum(self, minimum: int) -> None:
        self.latest.setMinimum(minimum)
        self._changed()

    def setMaximum(self, maximum: int) -> None:
        self.latest.setMaximum(maximum)
        self._changed()

    def setFormat(self, fmt: str) -> None:
        self.latest.setFormat(fmt)
        self._changed()

    def reset(self) -> None:
        self.latest.reset()
        self._changed()

    # -- getters: the latest values ----------------------------------------------------------------------------
    def value(self) -> int:
        return self.latest.value()

    def minimum(self) -> int:
        return self.latest.minimum()

    def maximum(self) -> int:
        return self.latest.maximum()

    def format(self) -> str:
        return self.latest.format()

    def text(self) -> str:                     # also what the bar paints (virtual): the words are never late
        return self.latest.text()

    def shown_value(self) -> int:
        """The value the bar shows now (QProgressBar's own)."""
        return QProgressBar.value(self)

    # -- showing --------------------------------------------------------------------------------------------
    def _changed(self) -> None:
        self._dirty = True
        if not self._timer.isActive():        # nothing shown within the interval: show it now
            self._show_latest()

    def _interval_over(self) -> None:
        if self._dirty:
            self._show_latest()

    def _show_latest(self) -> None:
        self._dirty = False
        lo, hi, v, fmt = self.latest.minimum(), self.latest.maximum(), self.latest.value(), self.latest.format()
        if (QProgressBar.minimum(self), QProgressBar.maximum(self), QProgressBar.value(self),
                QProgressBar.format(self)) != (lo, hi, v, fmt):
            self.shown_changes += 1
            self.setUpdatesEnabled(False)      # QProgressBar.setValue/reset would repaint here; this queues one
            try:                               # update() for the whole change instead (setUpdatesEnabled(True))
                QProgressBar.setRange(self, lo, hi)
                QProgressBar.setFormat(self, fmt)
                if v < lo:                     # QProgressBar's "no value yet" (reset)
                    QProgressBar.reset(self)
                else:
                    QProgressBar.setValue(self, v)
            finally:
                self.setUpdatesEnabled(True)
        self._timer.start()


def fmt_duration(seconds: float) -> str:
    """A duration for people, the one rule of the window (a download's time left, the next archive's)."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600:02d} h"


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
