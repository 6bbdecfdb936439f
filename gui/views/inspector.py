"""Inspector for support staff: open a folder, index, data, .torrent or magnet link; archives table, decoded
messages with search, and a verification report in which every fault names its archive."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSplitter, QTableView,
                               QTabWidget, QVBoxLayout, QWidget)

from gui.models import SORT_ROLE, Column, KeyedTableModel, fmt_bytes, fmt_time, payload_preview, short_id
from gui.operations import Operations

ERROR_COLOR, WARN_COLOR = QColor("#c0392b"), QColor("#b9770e")


def _inspection():
    """gui.inspection pulls in protobuf and Keccak: imported on first use, on a worker thread (cold start)."""
    import gui.inspection
    return gui.inspection


def make_table(model, *, search: QLineEdit | None = None) -> tuple[QTableView, QSortFilterProxyModel]:
    view = QTableView()
    proxy = QSortFilterProxyModel(view)      # Qt owns it: it dies with its view, never before
    proxy.setSourceModel(model)
    proxy.setSortRole(SORT_ROLE)
    proxy.setFilterKeyColumn(-1)
    proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
    if model.parent() is None:
        model.setParent(view)
    view.setModel(proxy)
    view.setSortingEnabled(True)
    view.sortByColumn(-1, Qt.SortOrder.AscendingOrder)   # source order until the user clicks a header
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
    view.setAlternatingRowColors(True)
    view.verticalHeader().setVisible(False)
    view.horizontalHeader().setStretchLastSection(True)
    view.horizontalHeader().setResizeContentsPrecision(40)   # size columns from 40 rows, not all of them
    if search is not None:
        search.textChanged.connect(proxy.setFilterFixedString)
    return view, proxy


def archive_columns() -> list[Column]:
    return [
        Column("Archive ID", lambda r: r.archive_id, lambda r: short_id(r.archive_id, 14), lambda r: r.archive_id),
        Column("From (UTC)", lambda r: r.start, lambda r: fmt_time(r.start)),
        Column("To (UTC)", lambda r: r.end, lambda r: fmt_time(r.end)),
        Column("Offset", lambda r: r.offset, align_right=True),
        Column("Size", lambda r: r.size, lambda r: fmt_bytes(r.size), align_right=True),
        Column("Padding", lambda r: r.padding, align_right=True),
        Column("Pieces", lambda r: r.pieces.start, lambda r: f"{r.pieces.start}–{r.pieces.stop - 1}"),
        Column("Messages", lambda r: r.messages, lambda r: r.error or str(r.messages if r.messages is not None else "")),
    ]


def message_columns() -> list[Column]:
    return [
        Column("Time (UTC)", lambda m: m[1].timestamp, lambda m: fmt_time(m[1].timestamp)),
        Column("Topic", lambda m: m[1].topic.hex(), lambda m: "0x" + m[1].topic.hex()),
        Column("Hash", lambda m: m[1].hash.hex(), lambda m: "0x" + m[1].hash.hex()),
        Column("Signer", lambda m: m[1].sig.hex(), lambda m: short_id("0x" + m[1].sig.hex(), 12)),
        Column("Bytes", lambda m: len(m[1].payload), align_right=True),
        Column("Payload", lambda m: payload_preview(m[1].payload)),
    ]


def finding_columns() -> list[Column]:
    return [
        Column("Severity", lambda f: f[1].severity),
        Column("Fault", lambda f: f[1].code),
        Column("Archive", lambda f: f[1].archive_id or "", lambda f: short_id(f[1].archive_id, 14) if f[1].archive_id
               else "(whole folder)", lambda f: f[1].archive_id),
        Column("What is wrong", lambda f: f[1].message, tooltip=lambda f: f[1].message),
    ]


class InspectorView(QWidget):
    opened = Signal(object)            # InspectorResult
    messages_loaded = Signal(str, int)  # archive id, count

    def __init__(self, ops: Operations, parent: QWidget | None = None):
        super().__init__(parent)
        self.ops = ops
        self.result = None    # gui.inspection.InspectorResult
        self.codex_api: str | None = None     # Codex node REST URL (Settings); None: the default local node
        self.fetcher = None                   # gui.inspection.MagnetFetcher: magnet links are fetched when set
        self.source = QLineEdit()
        self.source.setPlaceholderText("Folder, index, data, .torrent file, magnet link or Codex index CID")
        self.source.returnPressed.connect(lambda: self.open(self.source.text()))
        open_btn = QPushButton("Inspect")
        open_btn.clicked.connect(lambda: self.open(self.source.text()))
        folder_btn, file_btn = QPushButton("Folder…"), QPushButton("File…")
        folder_btn.clicked.connect(self.choose_folder)
        file_btn.clicked.connect(self.choose_file)
        top = QHBoxLayout()
        for w in (QLabel("Source:"), self.source, folder_btn, file_btn, open_btn):
            top.addWidget(w)
        self.summary = QLabel("Open an archive folder, an index, a data file, a torrent or a magnet link.")
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.faulty: set[str] = set()     # archives named by an error finding: shown in red
        self.archives = KeyedTableModel(archive_columns(), key=lambda r: r.archive_id,
                                        foreground=lambda r: ERROR_COLOR if r.error or r.archive_id in self.faulty
                                        else None)
        self.archive_view, self.archive_proxy = make_table(self.archives)
        self.archive_view.sortByColumn(3, Qt.SortOrder.AscendingOrder)   # data order (offset)
        self.archive_view.selectionModel().currentRowChanged.connect(self._archive_selected)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search messages (time, topic, hash, signer, payload)…")
        self.search.setClearButtonEnabled(True)
        self.messages = KeyedTableModel(message_columns(), key=lambda m: m[0])
        self.message_view, self.message_proxy = make_table(self.messages, search=self.search)
        self.message_info = QLabel("")
        msg_tab = QWidget()
        ml = QVBoxLayout(msg_tab)
        ml.addWidget(self.search)
        ml.addWidget(self.message_view)
        ml.addWidget(self.message_info)

        self.findings = KeyedTableModel(
            finding_columns(), key=lambda f: f[0],
            foreground=lambda f: ERROR_COLOR if f[1].severity == "error" else WARN_COLOR)
        self.finding_view, self.finding_proxy = make_table(self.findings)
        self.finding_view.doubleClicked.connect(self._finding_activated)
        self.finding_view.setWordWrap(True)       # every sentence readable in full
        self.finding_view.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.finding_view, "Verification report")
        self.tabs.addTab(msg_tab, "Messages")

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.archive_view)
        split.addWidget(self.tabs)
        split.setSizes([300, 300])
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.summary)
        lay.addWidget(split, 1)

    # -- actions ---------------------------------------------------------------------------------------------
    def choose_folder(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Open archive folder")
        if d:
            self.open(d)

    def choose_file(self) -> None:
        f, _ = QFileDialog.getOpenFileName(self, "Open index, data or torrent", "",
                                           "Archive files (index data *.torrent);;All files (*)")
        if f:
            self.open(f)

    def open(self, source: str | Path) -> None:
        source = str(source).strip()
        if not source:
            return
        self.source.setText(source)
        self.summary.setText(f"Opening {source} …")
        api, fetcher = self.codex_api, self.fetcher
        self.ops.run(lambda ctx: _inspection().open_source(source, codex_api=api, fetcher=fetcher), on_done=self._show, on_error=self._failed,
                     label=f"inspect {source}")

    def _failed(self, err: BaseException) -> None:
        from gui.inspection import InspectorResult
        self._show(InspectorResult(self.source.text(), "error", error=str(err)))

    def _show(self, res) -> None:   # gui.inspection.InspectorResult
        self.result = res
        self.faulty = {f.archive_id for f in res.faults if f.archive_id}
        self.archives.clear()
        self.archives.replace_all(res.rows)
        self.messages.clear()
        self.message_info.setText("Select an archive to decode its messages.")
        findings = list(enumerate(res.report.findings)) if res.report else []
        self.findings.replace_all(findings)
        self.archive_view.resizeColumnsToContents()
        self.finding_view.resizeColumnsToContents()
        self.finding_view.setColumnWidth(3, max(300, self.finding_view.viewport().width()
                                                - sum(self.finding_view.columnWidth(i) for i in range(3))))
        self.finding_view.resizeRowsToContents()
        text = res.summary()
        if res.error and res.report:
            text += f" — opened with an error: {res.error}"
        if res.torrent is not None:
            text += (f"\nTorrent {res.torrent.infohash} · {res.torrent.num_pieces} pieces · "
                     f"{len(res.torrent.trackers)} trackers (hover for the magnet link)")
            self.summary.setToolTip(res.torrent.magnet())
        ok = res.report is not None and res.report.ok and not res.error
        self.summary.setProperty("state", "ok" if ok else "fault")
        self.summary.style().unpolish(self.summary)
        self.summary.style().polish(self.summary)
        self.summary.setText(text)
        self.tabs.setCurrentIndex(0)
        self.opened.emit(res)

    def _archive_selected(self, current, _previous) -> None:
        if not current.isValid() or self.result is None:
            return
        aid = self.archive_proxy.data(current.siblingAtColumn(0), Qt.ItemDataRole.ToolTipRole)
        res = self.result
        self.message_info.setText(f"Decoding {aid} …")

        def done(msgs) -> None:
            self.messages.replace_all(list(enumerate(msgs)))
            self.message_view.resizeColumnsToContents()
            self.message_info.setText(f"{len(msgs)} messages in {aid}")
            self.messages_loaded.emit(aid, len(msgs))

        def failed(err: BaseException) -> None:
            self.messages.clear()
            self.message_info.setText(f"{aid} does not decode: {err}")
            self.messages_loaded.emit(aid, -1)
        self.ops.run(lambda ctx: res.messages(aid), on_done=done, on_error=failed, key="inspector",
                     label=f"decode {aid}")

    def select_archive(self, archive_id: str) -> bool:
        i = self.archives.row_of(archive_id)
        if i is None:
            return False
        idx = self.archive_proxy.mapFromSource(self.archives.index(i, 0))
        self.archive_view.setCurrentIndex(idx)
        self.archive_view.scrollTo(idx)
        return True

    def _finding_activated(self, index) -> None:
        src = self.finding_proxy.mapToSource(index)
        _, f = self.findings.rows()[src.row()]
        if f.archive_id:
            self.select_archive(f.archive_id)
            self.tabs.setCurrentIndex(1)
