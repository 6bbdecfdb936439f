"""The archive timeline: one bar per 7-day window (messages), a line for its size (KiB)."""
from __future__ import annotations

from typing import Iterable

from PySide6.QtCharts import (QBarCategoryAxis, QBarSeries, QBarSet, QChart, QChartView, QLineSeries,
                              QValueAxis)
from PySide6.QtCore import QMargins, QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from core.archive.inspect import utc_text
from core.node.state import ArchiveInfo


def windows(archives: Iterable[ArchiveInfo]) -> list[tuple[int, int, int, int]]:
    """(start, end, messages, bytes) per window; archives split by the 30 MB cap share a window."""
    acc: dict[tuple[int, int], list[int]] = {}
    for a in archives:
        w = acc.setdefault((a.start, a.end), [0, 0])
        w[0] += a.messages or 0
        w[1] += a.size
    return [(s, e, m, b) for (s, e), (m, b) in sorted(acc.items())]


class TimelineChart(QChartView):
    def __init__(self, parent=None):
        self.chart_ = QChart()
        super().__init__(self.chart_, parent)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.chart_.setTitle("Archive timeline (7-day windows)")
        self.chart_.legend().setAlignment(Qt.AlignmentFlag.AlignBottom)
        self.chart_.setMargins(QMargins(4, 4, 4, 4))
        self.chart_.setAnimationOptions(QChart.AnimationOption.NoAnimation)
        self.setMinimumHeight(220)
        self.shown: list[tuple[int, int, int, int]] = []

    def set_archives(self, archives: Iterable[ArchiveInfo]) -> None:
        data = windows(archives)
        if data == self.shown:
            return
        self.shown = data
        ch = self.chart_
        ch.removeAllSeries()
        for ax in ch.axes():
            ch.removeAxis(ax)
        if not data:
            ch.setTitle("Archive timeline: no archives yet")
            return
        ch.setTitle(f"Archive timeline: {len(data)} windows, {sum(d[2] for d in data)} messages")
        bars = QBarSet("Messages")
        bars.setColor(QColor("#3d7ab8"))
        sizes = QLineSeries()
        sizes.setName("Size (KiB)")
        sizes.setPen(QPen(QColor("#e08a1e"), 2))
        cats = []
        for i, (s, _e, m, b) in enumerate(data):
            bars.append(m)
            sizes.append(QPointF(i, b / 1024))
            cats.append(utc_text(s, "%b %d"))
        series = QBarSeries()
        series.append(bars)
        ch.addSeries(series)
        ch.addSeries(sizes)
        x = QBarCategoryAxis()
        x.append(cats)
        y = QValueAxis()
        y.setTitleText("messages")
        y.setRange(0, max(d[2] for d in data) * 1.15 or 1)
        y.setLabelFormat("%d")
        y2 = QValueAxis()
        y2.setTitleText("KiB")
        y2.setRange(0, max(d[3] for d in data) / 1024 * 1.15 or 1)
        y2.setLabelFormat("%d")
        ch.addAxis(x, Qt.AlignmentFlag.AlignBottom)
        ch.addAxis(y, Qt.AlignmentFlag.AlignLeft)
        ch.addAxis(y2, Qt.AlignmentFlag.AlignRight)
        series.attachAxis(x)
        series.attachAxis(y)
        sizes.attachAxis(x)
        sizes.attachAxis(y2)
