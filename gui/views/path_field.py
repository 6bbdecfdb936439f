"""A path line edit with a Browse… button beside it (the data folder, the Spark secret file)."""
from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QWidget


def path_field(parent: QWidget, text: str, placeholder: str,
               ask: Callable[[QWidget, str], str]) -> tuple[QLineEdit, QHBoxLayout]:
    """The line edit and its row; Browse… calls `ask(parent, current text)` (a file dialog) and puts a chosen
    path in the field (an empty answer, the dialog cancelled, leaves it as it was)."""
    edit = QLineEdit(text)
    edit.setPlaceholderText(placeholder)
    browse = QPushButton("Browse…")

    def choose() -> None:
        chosen = ask(parent, edit.text())
        if chosen:
            edit.setText(chosen)
    browse.clicked.connect(choose)
    row = QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(browse)
    return edit, row
