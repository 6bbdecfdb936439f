"""The log and event view: every engine event and every GUI operation, newest last, filterable."""
from __future__ import annotations

import json
import time

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.node.events import Event
from gui.models import Column, KeyedTableModel, fmt_time, short_id
from gui.views.inspector import make_table

MAX_ROWS = 5000


def details(data: dict) -> str:
    try:
        return json.dumps(data, default=str, sort_keys=True)[:400]
    except (TypeError, ValueError):
        return str(data)[:400]


class LogView(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._n = 0
        self.model = KeyedTableModel([
            Column("Time (UTC)", lambda r: r[1], lambda r: time.strftime("%H:%M:%S", time.gmtime(r[1])),
                   lambda r: fmt_time(r[1])),
            Column("Event", lambda r: r[2]),
            Column("Community", lambda r: r[3] or "", lambda r: short_id(r[3]) if r[3] else "",
                   lambda r: r[3]),
            Column("Details", lambda r: r[4], tooltip=lambda r: r[4]),
        ], key=lambda r: r[0], foreground=lambda r: QColor("#c0392b") if "error" in r[2].lower() else None)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter events…")
        self.search.setClearButtonEnabled(True)
        self.view, self.proxy = make_table(self.model, search=self.search)
        clear = QPushButton("Clear")
        clear.clicked.connect(self.model.clear)
        top = QHBoxLayout()
        title = QLabel("Log and events")
        title.setObjectName("heading")
        top.addWidget(title)
        top.addWidget(self.search, 1)
        top.addWidget(clear)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.view, 1)

    def add(self, name: str, community_id: str | None = None, data: dict | None = None,
            at: float | None = None) -> None:
        self._n += 1
        self.model.upsert((self._n, at or time.time(), name, community_id, details(data or {})))
        if self.model.rowCount() > MAX_ROWS:
            self.model.remove(self.model.rows()[0][0])
        if self._n <= 3 or self._n % 200 == 0:
            self.view.resizeColumnsToContents()
        self.view.scrollToBottom()

    def add_event(self, e: Event) -> None:
        self.add(e.name, e.community_id, e.data, e.at)
