"""Imported history of one community, in words: authors by their Status three-word name (key on hover), channels by
name (from the community description when known, else the chat ID shortened).

Rows come a page at a time, when the table scrolls near its end (Qt's canFetchMore/fetchMore), never all at once:
without a search through the engine's history(community_id, chat, limit, offset) (`load_requested` ->
`show_page`), with a search through `core.status.history_search` (SQLite FTS5 over the whole history, on a worker
thread). Without a search index the box filters the loaded rows only, and says so."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from gui.models import Column, KeyedTableModel, author_name, channel_label, fmt_time, short_id
from gui.views.inspector import make_table

PAGE = 500
SEARCH_DELAY_MS = 250          # typing pauses this long before a search runs


AUTHOR_PENDING = "(author pending)"     # the import's second pass has not recovered the signer yet


def _time(r) -> str:
    v = r[1].get("timestamp")
    if isinstance(v, (int, float)):
        return fmt_time(v / 1000 if v > 10**11 else v)
    return "" if v is None else str(v)


def _text(d: dict) -> str:
    t = d.get("text") or ""
    if t:
        return t.replace("\n", " ")
    kind = d.get("app_type", -1)
    return f"(no text: message type {kind})" if isinstance(kind, int) and kind > 1 else ""


class HistoryModel(KeyedTableModel):
    """Keyed rows plus fetch-on-demand: the view asks for more as it scrolls; one request at a time."""

    def __init__(self, columns, fetch) -> None:
        super().__init__(columns, key=lambda r: r[0])
        self.more = False
        self._fetch = fetch

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:
        return not parent.isValid() and self.more

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:
        if self.canFetchMore(parent):
            self.more = False           # the page that arrives says whether there is more
            self._fetch()


class HistoryView(QWidget):
    load_requested = Signal(str, object, int, int)   # community id, chat or None, limit, offset
    loaded = Signal(int)                            # rows now shown

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.community_id: str | None = None
        self.names: dict[str, str] = {}              # chat ID -> channel name
        self.searcher: Any = None                    # core.status.history_search.HistorySearch
        self._opening: list | None = None            # the one being opened on the worker thread
        self.ops: Any = None
        self.query = ""                              # the search being shown ("" = none)
        self._gen = 0                                # drops answers to requests made before a reload
        self._pending: int | None = None             # offset of the page asked for, if any
        self._total = 0                              # messages matching the search
        self.title = QLabel("History")
        self.title.setObjectName("heading")
        self.chat = QLineEdit()
        self.chat.setPlaceholderText("Channel name or chat ID (empty: all)")
        self.chat.returnPressed.connect(self.reload)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search messages and authors…")
        self.search.setClearButtonEnabled(True)
        self._timer = QTimer(self, singleShot=True, interval=SEARCH_DELAY_MS)
        self._timer.timeout.connect(self.apply_search)
        self.search.textChanged.connect(lambda _t: self._timer.start())
        self.search.returnPressed.connect(self.apply_search)
        self.reload_btn, self.more_btn = QPushButton("Reload"), QPushButton("Load more")
        self.reload_btn.clicked.connect(self.reload)
        self.more_btn.clicked.connect(self.load_more)
        self.more_btn.setEnabled(False)
        top = QHBoxLayout()
        for w in (self.chat, self.search, self.reload_btn, self.more_btn):
            top.addWidget(w)
        self.model = HistoryModel(self._columns(), self.load_more)
        self.view, self.proxy = make_table(self.model)
        for i, width in enumerate((130, 130, 220, 420, 70)):
            self.view.setColumnWidth(i, width)
        self.info = QLabel("Select a community to browse its imported messages.")
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addLayout(top)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.info)

    # -- sources -------------------------------------------------------------------------------------------
    def _ops(self) -> Any:
        if self.ops is None:
            from gui.operations import Operations
            self.ops = Operations(self, max_threads=1)      # one query at a time, in order
        return self.ops

    def set_searcher(self, searcher: Any) -> None:
        """Search the whole history with `searcher` (a HistorySearch, or anything with search/count/
        channel_names); its queries run on a worker thread of this view."""
        self.searcher = searcher
        self._ops().run(lambda _ctx: searcher.catch_up(), label="index history")   # warm: the first search is quick
        self._load_names()
        if self.search.text().strip():          # typed while the index was opening: now the whole history
            self.apply_search()

    def attach_engine(self, engine: Any) -> None:
        """Use the engine's history database for search and channel names, when it has one (members). Opening it
        creates the search tables (10-41 ms on the GUI thread, measured): that runs on its worker thread, and
        the box filters the loaded rows until it is open."""
        path = getattr(getattr(engine, "paths", None), "history_db", None)
        if path is None or not Path(path).exists():
            return
        opened: list = []
        self._opening = opened                  # closed by shutdown() if the view never takes it

        def open_index(_ctx):
            from core.status.history_search import HistorySearch
            opened.append(HistorySearch(path))
            return opened[-1]

        def take(searcher) -> None:
            if self._opening is opened:
                self._opening = None
                self.set_searcher(searcher)
            else:                               # attached again meanwhile: the newer one wins
                searcher.close()
        self._ops().run(open_index, on_done=take, label="open history search")

    def set_channel_names(self, names: dict[str, str]) -> None:
        """Channel names known from elsewhere (config, share links); the community description's win."""
        self.names = {**names, **self.names}
        self._repaint()

    def shutdown(self) -> None:
        if self.ops is not None:
            self.ops.shutdown(10_000)
        if self.searcher is not None and hasattr(self.searcher, "close"):
            self.searcher.close()
        for s in self._opening or ():          # opened on the worker but never taken
            s.close()
        self.searcher, self._opening = None, None

    # -- navigation ----------------------------------------------------------------------------------------
    def set_community(self, community_id: str, name: str) -> None:
        if community_id != self.community_id:
            self.community_id = community_id
            self.names = {}
            self.title.setText(f"History · {name}")
            self._load_names()
            self.reload()

    def chat_filter(self) -> str | None:
        """The chat ID to show: typed, or the chat of a channel typed by name (with or without '#')."""
        t = self.chat.text().strip()
        if not t:
            return None
        by_name = {n.lower(): c for c, n in self.names.items()}
        return by_name.get(t.lstrip("#").lower(), t)

    def reload(self) -> None:
        self._gen += 1
        self._pending = None
        self.model.more = False
        self.model.clear()
        self.load_more()

    def apply_search(self) -> None:
        """Show what the search box asks for: whole-history search when an index exists, else a filter."""
        self._timer.stop()
        text = self.search.text().strip()
        if self.searcher is None:
            self.proxy.setFilterFixedString(text)
            self._say_loaded()
            return
        self.proxy.setFilterFixedString("")
        if text != self.query:
            self.query = text
            self.reload()

    def load_more(self) -> None:
        if not self.community_id or self._pending is not None:
            return
        offset, gen, cid, chat = self.model.rowCount(), self._gen, self.community_id, self.chat_filter()
        self._pending = offset
        self.more_btn.setEnabled(False)
        self.info.setText("Searching the whole history …" if self.query else "Loading …")
        if not self.query:
            self.load_requested.emit(cid, chat, PAGE, offset)
            return
        q, s = self.query, self.searcher

        def work(_ctx):
            return (s.count(cid, q, chat) if offset == 0 else None), s.search(cid, q, chat, PAGE, offset)
        self.ops.run(work, on_done=lambda res: self._show(gen, cid, offset, res[1], res[0]),
                     on_error=lambda e: gen == self._gen and self.show_error(str(e)), label="history search")

    def show_page(self, community_id: str, offset: int, rows: list[dict]) -> None:
        """A page of the unsearched history (the engine's answer to `load_requested`)."""
        if not self.query:
            self._show(self._gen, community_id, offset, rows, None)

    def _show(self, gen: int, community_id: str, offset: int, rows: list[dict], total: int | None) -> None:
        if gen != self._gen or community_id != self.community_id or offset != self.model.rowCount():
            return                       # an answer to a request made before a reload or for another page
        self._pending = None
        if total is not None:
            self._total = total
        self.model.append_rows([(offset + i, r) for i, r in enumerate(rows)])
        self.model.more = len(rows) >= PAGE
        self.more_btn.setEnabled(self.model.more)
        self._say_loaded()
        self.loaded.emit(self.model.rowCount())

    def _say_loaded(self) -> None:
        n = self.model.rowCount()
        if self.query:
            total = max(self._total, n)
            self.info.setText(f"{total} message{'s' if total != 1 else ''} in the whole history match "
                              f"“{self.query}”" + (f" ({n} shown, more as you scroll)" if n < total else ""))
        elif self.search.text().strip() and self.searcher is None:
            self.info.setText(f"Filtering the {n} loaded messages ({self.proxy.rowCount()} match); whole-history "
                              "search needs the history database")
        else:
            self.info.setText(f"{n} messages loaded" + (" (more as you scroll)" if self.model.more else " (all)"))

    def show_error(self, text: str) -> None:
        self._pending = None
        self.info.setText(f"History is not available: {text}")

    # -- cells ---------------------------------------------------------------------------------------------
    def _load_names(self) -> None:
        if self.searcher is None or not self.community_id or self.ops is None:
            return
        cid, s = self.community_id, self.searcher
        self.ops.run(lambda _ctx: s.channel_names(cid), label="channel names",
                     on_done=lambda names: cid == self.community_id and self._set_names(names))

    def _set_names(self, names: dict[str, str]) -> None:
        self.names.update(names)
        self._repaint()

    def _repaint(self) -> None:
        if self.model.rowCount():
            self.model.dataChanged.emit(self.model.index(0, 0),
                                        self.model.index(self.model.rowCount() - 1, self.model.columnCount() - 1))

    def _columns(self) -> list[Column]:
        d = lambda r: r[1]      # noqa: E731
        return [
            Column("Time (UTC)", lambda r: d(r).get("timestamp"), _time),
            Column("Channel", lambda r: d(r).get("chat_id") or "",
                   lambda r: channel_label(d(r).get("chat_id") or "", self.community_id, self.names),
                   lambda r: d(r).get("chat_id") or None),
            Column("Author", lambda r: AUTHOR_PENDING if d(r).get("author_pending") else
                   author_name(d(r).get("author") or ""),
                   tooltip=lambda r: d(r).get("author") or None),
            Column("Message", lambda r: _text(d(r)), tooltip=lambda r: d(r).get("text") or None),
            Column("Source", lambda r: d(r).get("source") or "", tooltip=lambda r: d(r).get("archive_id") or None),
            Column("Message ID", lambda r: d(r).get("id") or "", lambda r: short_id(d(r).get("id") or "", 12),
                   lambda r: d(r).get("id") or None),
        ]
