"""Imported history of one community, paged through the engine's history(community_id, chat, limit, offset)."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from gui.models import Column, KeyedTableModel, fmt_time, payload_preview, short_id
from gui.views.inspector import make_table

PAGE = 500
PREFERRED = ("timestamp", "author", "from", "text", "payload", "chat_id", "chat", "source", "id", "hash")
TITLES = {"timestamp": "Time (UTC)", "author": "Author", "from": "From", "text": "Message", "chat_id": "Chat",
          "source": "Source", "id": "Message ID", "payload": "Payload"}
HIDDEN = {"clock", "topic", "content_type", "app_type"}     # internal fields: not worth a column


def cell(v: Any) -> str:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return payload_preview(bytes(v))
    return "" if v is None else str(v)


def columns_for(rows: list[dict]) -> list[str]:
    keys: list[str] = []
    for r in rows[:50]:
        keys += [k for k in r if k not in keys]
    ordered = [k for k in PREFERRED if k in keys] + [k for k in keys if k not in PREFERRED and k not in HIDDEN]
    return ordered[:7]


class HistoryView(QWidget):
    load_requested = Signal(str, object, int, int)   # community id, chat or None, limit, offset
    loaded = Signal(int)                            # rows now shown

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.community_id: str | None = None
        self.keys: list[str] = []
        self.title = QLabel("History")
        self.title.setObjectName("heading")
        self.chat = QLineEdit()
        self.chat.setPlaceholderText("Chat ID (empty: all chats)")
        self.chat.returnPressed.connect(self.reload)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter loaded messages…")
        self.search.setClearButtonEnabled(True)
        self.reload_btn, self.more_btn = QPushButton("Reload"), QPushButton("Load more")
        self.reload_btn.clicked.connect(self.reload)
        self.more_btn.clicked.connect(self.load_more)
        top = QHBoxLayout()
        for w in (self.chat, self.search, self.reload_btn, self.more_btn):
            top.addWidget(w)
        self.model = KeyedTableModel([], key=lambda r: r[0])
        self.view, self.proxy = make_table(self.model, search=self.search)
        self.info = QLabel("Select a community to browse its imported messages.")
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addLayout(top)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.info)

    def set_community(self, community_id: str, name: str) -> None:
        if community_id != self.community_id:
            self.community_id = community_id
            self.title.setText(f"History · {name}")
            self.reload()

    def reload(self) -> None:
        self.model.clear()
        self.load_more()

    def load_more(self) -> None:
        if self.community_id:
            self.info.setText("Loading …")
            self.load_requested.emit(self.community_id, self.chat.text().strip() or None, PAGE,
                                     self.model.rowCount())

    def show_page(self, community_id: str, offset: int, rows: list[dict]) -> None:
        if community_id != self.community_id:
            return
        if offset == 0 or not self.keys:
            self.keys = columns_for(rows)
            self.model.beginResetModel()
            self.model.columns = [self._column(k) for k in self.keys]
            self.model.endResetModel()
        first = self.model.rowCount() == 0
        for i, r in enumerate(rows):
            self.model.upsert((offset + i, r))
        if first:
            self.view.resizeColumnsToContents()
            for i in range(len(self.keys)):      # long texts and IDs must not push the other columns away
                self.view.setColumnWidth(i, min(self.view.columnWidth(i), 420))
        self.info.setText(f"{self.model.rowCount()} messages loaded"
                          + ("" if len(rows) >= PAGE else " (all)"))
        self.more_btn.setEnabled(len(rows) >= PAGE)
        self.loaded.emit(self.model.rowCount())

    def show_error(self, text: str) -> None:
        self.info.setText(f"History is not available: {text}")

    @staticmethod
    def _column(k: str) -> Column:
        if k in ("timestamp", "clock"):
            def text(r, k=k):
                v = r[1].get(k)
                if isinstance(v, (int, float)):
                    return fmt_time(v / 1000 if v > 10**11 else v)
                return cell(v)
            return Column(TITLES.get(k, k), lambda r, k=k: r[1].get(k), text)
        def short(r, k=k):
            v = cell(r[1].get(k))
            return short_id(v, 12) if v.startswith("0x") and len(v) > 24 else v
        return Column(TITLES.get(k, k), lambda r, k=k: cell(r[1].get(k)), short, lambda r, k=k: cell(r[1].get(k)))
