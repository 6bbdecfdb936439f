"""Inspector for support staff: open a folder, index, data, .torrent or magnet link; archives table, decoded
messages with search, and a verification report in which every fault says, in plain words, what is wrong, where
(archive, data bytes) and what to do; which checks ran; and an export of that report (HTML or JSON) for a ticket."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSizePolicy, QSplitter, QTableView,
                               QTabWidget, QVBoxLayout, QWidget)

from gui.models import (SORT_ROLE, Column, KeyedTableModel, fmt_bytes, fmt_time, payload_preview, short_archive_id,
                        short_id)
from gui.operations import Operations

ERROR_COLOR, WARN_COLOR = QColor("#c0392b"), QColor("#b9770e")


def _inspection():
    """gui.inspection pulls in protobuf and Keccak: imported on first use, on a worker thread (cold start)."""
    import gui.inspection
    return gui.inspection


ZWSP = "\u200b"


def breakable(text: str, longest: int = 80) -> str:
    """For display only: a zero-width space every `longest` characters inside longer words (magnet links, paths),
    so a word-wrapped label wraps them instead of growing wider than the screen. IDs (66 characters) stay whole."""
    def cut(word: str) -> str:
        return word if len(word) <= longest else ZWSP.join(word[i:i + longest] for i in range(0, len(word), longest))
    return "\n".join(" ".join(cut(w) for w in line.split(" ")) for line in text.split("\n"))


def long_text_label(name: str) -> QLabel:
    """A word-wrapped label that never sets the window's minimum width (long values wrap, see `breakable`)."""
    label = QLabel("")
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def say(label: QLabel, text: str, tooltip: str | None = None) -> None:
    """Show `text` wrapped (see `breakable`); the tooltip keeps it whole, for reading and copying."""
    label.setText(breakable(text))
    label.setToolTip(text if tooltip is None else tooltip)


def _with_suffix(path: str, name_filter: str) -> str:
    """A name typed without .html/.json gets the suffix of the file type chosen in the dialog."""
    if Path(path).suffix.lower() in (".html", ".htm", ".json"):
        return path
    return path + (".json" if "json" in name_filter.lower() else ".html")


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
        Column("Archive ID", lambda r: r.archive_id, lambda r: short_archive_id(r.archive_id), lambda r: r.archive_id),
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
    """Rows are (index, gui.report.Fault): plain words first; the verifier's code and sentence on hover."""
    detail = lambda f: f"{f[1].code}: {f[1].detail}"  # noqa: E731
    return [
        Column("Severity", lambda f: f[1].severity),
        Column("What is wrong", lambda f: f[1].title, tooltip=detail),
        Column("Where", lambda f: f[1].where, tooltip=lambda f: f[1].where),
        Column("What to do", lambda f: f[1].what_to_do, tooltip=lambda f: f[1].what_to_do),
        Column("Code", lambda f: f[1].code, tooltip=detail),
    ]


class InspectorView(QWidget):
    opened = Signal(object)            # InspectorResult
    messages_loaded = Signal(str, int)  # archive id, count
    exported = Signal(str)             # path of the report written

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
        self.export_btn = QPushButton("Export report…")
        self.export_btn.setToolTip("Save this verification report as HTML or JSON, to attach to a ticket")
        self.export_btn.setEnabled(False)
        self.export_btn.clicked.connect(self.choose_export)
        self.export_dialog: QFileDialog | None = None
        self.clock: Callable[[], float] = time.time     # the report's date (injected in tests)
        for w in (QLabel("Source:"), self.source, folder_btn, file_btn, open_btn):
            top.addWidget(w)
        self.summary = long_text_label("summary")
        self.summary.setText("Open an archive folder, an index, a data file, a torrent or a magnet link.")
        self.checks = long_text_label("checks")
        self.export_note = long_text_label("exportNote")

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
        checks_row = QHBoxLayout()          # not in the top row: that row sets the window's minimum width
        checks_row.addWidget(self.checks, 1)
        checks_row.addWidget(self.export_btn)
        lay.addLayout(checks_row)
        lay.addWidget(self.export_note)
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
        say(self.summary, f"Opening {source} …")
        api, fetcher = self.codex_api, self.fetcher
        self.ops.run(lambda ctx: _inspection().open_source(source, codex_api=api, fetcher=fetcher), on_done=self._show, on_error=self._failed,
                     label=f"inspect {source}")

    def _failed(self, err: BaseException) -> None:
        from gui.inspection import InspectorResult
        self._show(InspectorResult(self.source.text(), "error", error=str(err)))

    def _show(self, res) -> None:   # gui.inspection.InspectorResult
        from gui.report import NOT_CHECKED, checks, faults
        self.result = res
        self.faulty = {f.archive_id for f in res.faults if f.archive_id}
        self.archives.clear()
        self.archives.replace_all(res.rows)
        self.messages.clear()
        self.message_info.setText("Select an archive to decode its messages.")
        self.findings.replace_all(list(enumerate(faults(res))))
        self.archive_view.resizeColumnsToContents()
        self.finding_view.resizeColumnsToContents()
        for col, width in ((1, 320), (2, 300), (3, 320)):    # sentences wrap inside these instead of widening
            self.finding_view.setColumnWidth(col, width)
        self.finding_view.resizeRowsToContents()
        text = res.summary()
        if res.error and res.report and not res.not_archive:
            text += f" — opened with an error: {res.error}"
        tip = None
        if res.torrent is not None:
            text += (f"\nTorrent {res.torrent.infohash} · {res.torrent.num_pieces} pieces · "
                     f"{len(res.torrent.trackers)} trackers (hover for the magnet link)")
            tip = res.torrent.magnet()
        done = checks(res)
        mark = {"passed": "✓", "failed": "✗"}
        self.checks.setText("Checked: " + " · ".join(
            f"{c.name} {mark.get(c.status, '—')} {c.status}" for c in done) if done else "")
        ok = res.report is not None and res.report.ok and not res.error and all(c.status != NOT_CHECKED for c in done)
        self.summary.setProperty("state", "ok" if ok else "fault")
        self.summary.style().unpolish(self.summary)
        self.summary.style().polish(self.summary)
        say(self.summary, text, tip)
        self.export_btn.setEnabled(True)
        say(self.export_note, "")
        self.tabs.setCurrentIndex(0)
        self.opened.emit(res)

    # -- report for a ticket ---------------------------------------------------------------------------------
    def choose_export(self) -> None:
        """A (non-native, so the same everywhere and under test) save dialog; the report is written on accept."""
        if self.result is None:
            return
        if self.export_dialog is None:
            d = QFileDialog(self, "Export inspection report")
            d.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
            d.setOption(QFileDialog.Option.DontUseNativeDialog, True)
            d.setNameFilters(["HTML report (*.html)", "JSON report (*.json)"])
            d.fileSelected.connect(lambda path: self.export_to(_with_suffix(path, d.selectedNameFilter())))
            self.export_dialog = d
        name = Path(self.result.source.rstrip("/")).name or "archive"
        self.export_dialog.selectFile(f"inspection-{name[:40]}.html")
        self.export_dialog.open()

    def export_to(self, path: str | Path) -> bool:
        """Write the report (.json: JSON, else HTML) for the result on screen; say where, or why it failed."""
        from gui.report import write_report
        if self.result is None or not str(path):
            return False
        try:
            kind = write_report(self.result, path, now=self.clock())
        except OSError as e:
            say(self.export_note, f"The report could not be written to {path}: {e.strerror or e}")
            return False
        say(self.export_note, f"Report saved ({kind.upper()}): {path}")
        self.exported.emit(str(path))
        return True

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
