"""The Browse… button of a path field (Settings' data folder, the Spark secret file): the dialog gets the field's
text as its start, a chosen path replaces the text, a cancelled dialog leaves it."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton, QWidget

from gui.views.path_field import path_field


def test_browse_puts_the_chosen_path_in_the_field_and_a_cancel_keeps_it(qtbot):
    parent = QWidget()
    qtbot.addWidget(parent)
    answers, asked = ["/chosen/folder", ""], []

    def ask(w, current):
        asked.append((w, current))
        return answers.pop(0)
    edit, row = path_field(parent, "/start", "a folder", ask)
    parent.setLayout(row)
    assert edit.placeholderText() == "a folder" and edit.text() == "/start"
    browse = parent.findChild(QPushButton)
    qtbot.mouseClick(browse, Qt.LeftButton)
    assert edit.text() == "/chosen/folder" and asked == [(parent, "/start")]
    qtbot.mouseClick(browse, Qt.LeftButton)          # cancelled: the dialog answers ""
    assert edit.text() == "/chosen/folder" and asked[-1] == (parent, "/chosen/folder")
