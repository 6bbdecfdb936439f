"""Placeholder main window: an inspector table over one archive folder."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from PySide6.QtWidgets import QLabel, QMainWindow, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from core.archive.inspect import inspect_path


class MainWindow(QMainWindow):
    COLUMNS = ["Archive ID", "From", "To", "Offset", "Size", "Padding", "Pieces", "Messages"]

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Archivist")
        self.resize(1100, 600)
        body = QWidget()
        lay = QVBoxLayout(body)
        self.status = QLabel("Open an archive folder to inspect it.")
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        lay.addWidget(self.status)
        lay.addWidget(self.table)
        self.setCentralWidget(body)

    def open_folder(self, folder: Path) -> None:
        ins = inspect_path(str(folder))
        self.status.setText(f"{len(ins.rows)} archives in {folder}")
        self.table.setRowCount(len(ins.rows))
        fmt = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")  # noqa: E731
        for i, r in enumerate(ins.rows):
            vals = [r.archive_id, fmt(r.start), fmt(r.end), r.offset, r.size, r.padding, len(r.pieces),
                    r.error or r.messages]
            for j, v in enumerate(vals):
                self.table.setItem(i, j, QTableWidgetItem(str(v)))
        self.table.resizeColumnsToContents()
