"""The first-run forms (gui/views/welcome.py shows them): the owner's and the member's choices, and the data folder."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QDate, Qt, QTimeZone, Signal
from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QDateEdit, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QListWidget, QPlainTextEdit, QPushButton, QRadioButton,
                               QVBoxLayout, QWidget)

from gui.models import POLICY_WORDS

ERROR_STYLE = "color: #a1281b;"
KEY_NOTE = ("Create saves the key in the data folder (keys/), readable only by you; anyone holding it controls the "
            "community, so keep a copy somewhere safe.")
HOW_TO_COPY = "In Status: the community's menu > Share community, then copy the link."
CONFIG_NAME = "archivist.toml"


def label(text: str = "", name: str = "explainer", error: bool = False) -> QLabel:
    w = QLabel(text)
    w.setObjectName(name)
    w.setWordWrap(True)
    w.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if error:
        w.setStyleSheet(ERROR_STYLE)
        w.setVisible(bool(text))
    return w


def hrow(*items, stretch: int | None = None) -> QHBoxLayout:
    """Widgets side by side; None is a stretch, and the widget at index `stretch` takes the spare width."""
    lay = QHBoxLayout()
    for i, w in enumerate(items):
        lay.addStretch(1) if w is None else lay.addWidget(w, 1 if i == stretch else 0)
    return lay


def sentence(e) -> str:
    """An exception's one-line message as a sentence for the screen."""
    t = str(e).strip()
    return (t[:1].upper() + t[1:] + ("" if t.endswith((".", "!", "?")) else ".")) if t else ""


def show_error(w: QLabel, text: str) -> None:
    w.setText(text)
    w.setVisible(bool(text))


class Place(QGroupBox):
    """Where the node keeps its data, and whether it talks to the network or only to this computer."""

    def __init__(self, default_dir: Path, parent: QWidget | None = None):
        super().__init__("Where Archivist keeps its data", parent)
        self.folder = QLineEdit(str(default_dir))
        self.folder.setPlaceholderText("a folder for archives, downloads and the node's state")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = hrow(self.folder, browse, stretch=0)
        self.loopback = QCheckBox("Only this computer (127.0.0.1: no DHT, UPnP or local discovery), for trying "
                                  "Archivist out")
        self.error = label(error=True)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.error)
        lay.addWidget(self.loopback)

    def _browse(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Data folder", self.folder.text())
        if d:
            self.folder.setText(d)

    def path(self) -> Path | None:
        text = self.folder.text().strip()
        if not text:
            show_error(self.error, "Choose a folder for the data.")
            return None
        p = Path(os.path.expanduser(text))
        if not p.is_absolute():
            show_error(self.error, "Give the full path of the folder (it starts with /).")
            return None
        if p.exists() and not p.is_dir():
            show_error(self.error, f"{p} is a file, not a folder.")
            return None
        show_error(self.error, "")
        return p


class FormPage(QWidget):
    """A page with a Back button, a primary button and one error line above them."""
    back = Signal()

    def __init__(self, title: str, intro: str, primary: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.body = QVBoxLayout()
        heading = label(title, "heading")
        self.error = label(error=True)
        self.back_btn, self.primary_btn = QPushButton("Back"), QPushButton(primary)
        self.primary_btn.setObjectName("applyPolicy")      # the style sheet's primary-action look
        self.primary_btn.setDefault(True)
        self.back_btn.clicked.connect(self.back)
        buttons = hrow(self.back_btn, None, self.primary_btn)
        lay = QVBoxLayout(self)
        lay.addWidget(heading)
        lay.addWidget(label(intro))
        lay.addLayout(self.body)
        lay.addStretch(1)
        lay.addWidget(self.error)
        lay.addLayout(buttons)


class OwnerPage(FormPage):
    def __init__(self, default_dir: Path, parent: QWidget | None = None):
        super().__init__("Create a community archive",
                         "Your computer keeps the community's history: every 7 days it bundles the messages into an "
                         "archive, shares it over BitTorrent and announces it, signed with the community key, so "
                         "members can fetch it. It must be online for that.", "Create", parent)
        self.identity = None                 # core.status.identity.CommunityIdentity once generated or imported
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. Doodles")
        form = QFormLayout()
        form.addRow("Community name:", self.name)

        key_box = QGroupBox("Community key")
        self.generate_btn = QPushButton("Generate a new key")
        self.key_text = QLineEdit()
        self.key_text.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_text.setPlaceholderText("…or paste an exported private key (64 hex digits)")
        self.key_text.returnPressed.connect(self._import_text)
        self.import_btn, self.key_file_btn = QPushButton("Import"), QPushButton("From file…")
        self.generate_btn.clicked.connect(self._generate)
        self.import_btn.clicked.connect(self._import_text)
        self.key_file_btn.clicked.connect(self._import_file)
        krow = hrow(self.generate_btn, self.key_text, self.import_btn, self.key_file_btn, stretch=1)
        self.key_info = label(f"No key yet. {KEY_NOTE}")
        self.key_error = label(error=True)
        kl = QVBoxLayout(key_box)
        kl.addLayout(krow)
        kl.addWidget(self.key_error)
        kl.addWidget(self.key_info)

        chan_box = QGroupBox("Channels to archive")
        self.channel = QLineEdit()
        self.channel.setPlaceholderText("a channel name, or for an existing community its channel link "
                                        "(status.app/cc/…)")
        self.channel.returnPressed.connect(self._add_channel)
        self.add_btn, self.remove_btn = QPushButton("Add"), QPushButton("Remove")
        self.add_btn.clicked.connect(self._add_channel)
        self.remove_btn.clicked.connect(self._remove_channel)
        self.channels = QListWidget()
        self.channels.setMaximumHeight(110)
        self.channel_error = label(error=True)
        crow = hrow(self.channel, self.add_btn, self.remove_btn, stretch=0)
        cl = QVBoxLayout(chan_box)
        cl.addLayout(crow)
        cl.addWidget(self.channel_error)
        cl.addWidget(self.channels)

        self.place = Place(default_dir)
        for w in (key_box, chan_box, self.place):
            self.body.addWidget(w)
        self.body.insertLayout(0, form)

    def _set_identity(self, ident) -> None:
        self.identity = ident
        from core.status.share_link import community_share_link
        self.key_info.setText(f"Community ID: {ident.community_id}\nShare link: "
                              f"{community_share_link(ident.community_id)}\n{KEY_NOTE}")
        show_error(self.key_error, "")

    def _generate(self) -> None:
        from core.status.identity import CommunityIdentity
        self._set_identity(CommunityIdentity.generate())

    def _import(self, text: str) -> None:
        from core.node.config import ConfigError, private_key_from_text
        try:
            self._set_identity(private_key_from_text(text))
        except ConfigError as e:
            show_error(self.key_error, f"Not a usable key: {str(e).rstrip('.')}.")

    def _import_text(self) -> None:
        self._import(self.key_text.text())
        self.key_text.clear()

    def _import_file(self) -> None:
        f, _ = QFileDialog.getOpenFileName(self, "Community key", "", "Key files (*.key *.txt *.json);;All files (*)")
        if f:
            from gui.views.keys import MAX_KEY_FILE
            try:
                if Path(f).stat().st_size > MAX_KEY_FILE:     # checked before reading, as every key file is
                    show_error(self.key_error, f"{Path(f).name} is too large to be a key file.")
                    return
                self._import(Path(f).read_bytes().decode("utf-8", "replace"))
            except OSError as e:
                show_error(self.key_error, f"Cannot read {f}: {e.strerror}.")

    def channel_entries(self) -> list[str]:
        return [self.channels.item(i).text() for i in range(self.channels.count())]

    def _add_channel(self) -> None:
        text = self.channel.text().strip()
        if not text:
            return
        if text.lower() in {t.lower() for t in self.channel_entries()}:
            show_error(self.channel_error, f"{text} is already listed.")
            return
        show_error(self.channel_error, "")
        self.channels.addItem(text)
        self.channel.clear()

    def _remove_channel(self) -> None:
        for item in self.channels.selectedItems():
            self.channels.takeItem(self.channels.row(item))


class MemberPage(FormPage):
    def __init__(self, default_dir: Path, default_policy: str = "all", parent: QWidget | None = None):
        super().__init__("Join a community",
                         "Archivist listens for the community's archive announcements, downloads the history you "
                         "choose and keeps it on this computer.", "Join", parent)
        self.link = None                       # core.status.share_link.CommunityLink of the pasted text
        self.link_edit = QLineEdit()
        self.link_edit.setPlaceholderText("https://status.app/c/…#zQ3sh… or the community's public key")
        self.link_edit.textChanged.connect(self._link_changed)
        self.link_error = label(error=True)
        self.link_info = label(HOW_TO_COPY)
        self._auto = ""
        self.name = QLineEdit()
        self.name.setPlaceholderText("how the community is listed here")
        link_box = QWidget()
        ll = QVBoxLayout(link_box)
        ll.setContentsMargins(0, 0, 0, 0)
        for w in (self.link_edit, self.link_error, self.link_info):
            ll.addWidget(w)
        form = QFormLayout()
        form.addRow("Share link:", link_box)
        form.addRow("Name:", self.name)

        choice = QGroupBox("What to download")
        self.all_btn = QRadioButton(POLICY_WORDS["all"])
        self.latest_btn = QRadioButton(POLICY_WORDS["latest"])
        self.range_btn = QRadioButton(POLICY_WORDS["range"] + " (UTC):")
        self.group = QButtonGroup(self)
        for i, b in enumerate((self.all_btn, self.latest_btn, self.range_btn)):
            self.group.addButton(b, i)
        {"latest": self.latest_btn, "range": self.range_btn}.get(default_policy, self.all_btn).setChecked(True)
        today = QDate.currentDate()
        self.date_from, self.date_to = QDateEdit(today.addMonths(-3)), QDateEdit(today)
        for d in (self.date_from, self.date_to):
            d.setCalendarPopup(True)
            d.setDisplayFormat("yyyy-MM-dd")
            d.setTimeZone(QTimeZone.utc())
        row = hrow(self.range_btn, QLabel("from"), self.date_from, QLabel("to"), self.date_to, None)
        cl = QVBoxLayout(choice)
        cl.addWidget(self.all_btn)
        cl.addWidget(self.latest_btn)
        cl.addLayout(row)
        cl.addWidget(label("Archives are whole weeks; you can change this later in the community's view."))

        chan_box = QGroupBox("Channels you follow (optional)")
        self.channels = QPlainTextEdit()
        self.channels.setPlaceholderText("one channel link (status.app/cc/…) or chat ID per line")
        self.channels.setFixedHeight(60)
        self.channel_error = label(error=True)
        chl = QVBoxLayout(chan_box)
        chl.addWidget(self.channels)
        chl.addWidget(self.channel_error)
        chl.addWidget(label("Archives always hold every channel of the community; this list is kept in the "
                            "configuration with the community."))
        self.place = Place(default_dir)
        self.body.addLayout(form)
        for w in (choice, chan_box, self.place):
            self.body.addWidget(w)

    def _info(self, text: str) -> None:
        self.link_info.setText(text)
        self.link_info.setVisible(bool(text))

    def _auto_name(self, name: str) -> None:
        """Fill the name from the link unless the person typed their own."""
        if self.name.text() == self._auto:
            self.name.setText(name)
        self._auto = name

    def _link_changed(self, text: str) -> None:
        from core.status.share_link import ShareLinkError, parse, serialize_public_key
        self.link = None
        if not text.strip():
            show_error(self.link_error, "")
            self._info(HOW_TO_COPY)
            self._auto_name("")
            return
        try:
            link = parse(text)
        except ShareLinkError as e:
            show_error(self.link_error, str(e))
            self._info("")
            self._auto_name("")
            return
        self.link = link
        show_error(self.link_error, "")
        key = serialize_public_key(bytes.fromhex(link.community_id[2:]))
        parts = [f"Community key: {link.community_id}", f"({key})"]
        if link.name:
            parts.insert(0, f"“{link.name}”" + (f", {link.members} members" if link.members else "") + " —")
        if link.source != "public-key" and not link.data_decoded and "/c/" in text:
            parts.append("(name not read: the brotli package is not installed)")
        self._info(" ".join(parts))
        self._auto_name(link.name)
        if link.channel_uuid and link.channel_chat_id not in self.channels.toPlainText():
            self.channels.appendPlainText(text.strip())

    def policy(self) -> tuple[str, int | None, int | None]:
        if self.latest_btn.isChecked():
            return "latest", None, None
        if self.range_btn.isChecked():
            from gui.views.member import to_ts      # UTC dates, `to` day included, as the member view does
            return "range", to_ts(self.date_from.date()), to_ts(self.date_to.date(), end_of_day=True)
        return "all", None, None
