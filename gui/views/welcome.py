"""First run: shown when there is no node configuration. Three ways in: create a community archive (owner), join a
community from its share link (member), or open an archive in the Inspector (support staff, no node).

Owner and member end by writing the same TOML file `archivist node --config` reads (core.node.config.save) and
emitting `config_written(path)`; gui/app.py then opens the main window and starts that node. The logic (share
links, channel IDs, the settings built from the choices) is in core/; this module only gathers the choices."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QDate, QSettings, Qt, QTimeZone, Signal
from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QDateEdit, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QListWidget, QPlainTextEdit, QPushButton, QRadioButton,
                               QScrollArea, QStackedWidget, QVBoxLayout, QWidget)

from gui.resources import icon

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
            try:
                self._import(Path(f).read_bytes()[:65536].decode("utf-8", "replace"))
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
        self.all_btn = QRadioButton("All history")
        self.latest_btn = QRadioButton("Only the latest week")
        self.range_btn = QRadioButton("A time range (UTC):")
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


class WelcomeWindow(QWidget):
    """The first-run window. `config` fixes where the file goes ($ARCHIVIST_CONFIG or --config); otherwise it is
    written into the chosen data folder, and that folder becomes the Settings' data directory."""
    config_written = Signal(object)      # Path of the new config file
    inspect_requested = Signal()

    def __init__(self, settings: QSettings, config: Path | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        from core.node.config import default_data_dir
        from gui.views.settings import load
        self.settings, self.fixed_config = settings, config
        self.main_window = None              # set by gui.app when the main window takes over
        v = load(settings)
        self.default_dir = Path(v["data_dir"]) if v["data_dir"] else default_data_dir()
        self.engine_settings = v
        self.setWindowTitle("Welcome to Archivist")
        self.setWindowIcon(icon("archivist"))
        self.setObjectName("welcome")
        self.resize(820, 680)

        self.choose = QWidget()
        cl = QVBoxLayout(self.choose)
        cl.addWidget(label("Welcome to Archivist", "heading"))
        cl.addWidget(label("Archivist keeps a Status community's message history alive: the owner's computer bundles "
                           "each week of messages into an archive and shares it; members download the weeks they "
                           "want. How do you want to start?"))
        self.create_btn = self._choice(cl, "Create a community archive",
                                       "You own a Status community, or start a new one: this computer builds, "
                                       "seeds and announces its archives.")
        self.join_btn = self._choice(cl, "Join a community",
                                     "Paste a community's share link: this computer downloads the history you choose.")
        self.open_btn = self._choice(cl, "Open an archive",
                                     "Inspect and verify an archive folder, torrent, magnet link or Codex CID. No node "
                                     "is started and nothing is written.")
        cl.addStretch(1)
        self.owner = OwnerPage(self.default_dir)
        self.member = MemberPage(self.default_dir, v["default_policy"])
        self.pages = QStackedWidget()
        for w in (self.choose, self.owner, self.member):
            area = QScrollArea()             # small screens scroll instead of squeezing the forms
            area.setWidget(w)
            area.setWidgetResizable(True)
            area.setFrameShape(QScrollArea.Shape.NoFrame)
            self.pages.addWidget(area)
        self.create_btn.clicked.connect(lambda: self._go(self.owner, self.owner.name))
        self.join_btn.clicked.connect(lambda: self._go(self.member, self.member.link_edit))
        self.open_btn.clicked.connect(self.inspect_requested)
        for p in (self.owner, self.member):
            p.back.connect(lambda: self._go(self.choose, self.create_btn))
        self.owner.primary_btn.clicked.connect(self.create)
        self.member.primary_btn.clicked.connect(self.join)
        QVBoxLayout(self).addWidget(self.pages)

    def _choice(self, lay: QVBoxLayout, title: str, text: str) -> QPushButton:
        b = QPushButton(title)
        b.setObjectName("choice")
        b.setMinimumHeight(44)
        lay.addSpacing(8)
        lay.addWidget(b)
        lay.addWidget(label(text))
        return b

    def _go(self, page: QWidget, focus: QWidget) -> None:
        self.pages.setCurrentWidget(page.parentWidget().parentWidget())    # the page's scroll area
        focus.setFocus()

    def current_page(self) -> QWidget:
        return self.pages.currentWidget().widget()

    # -- writing the configuration ------------------------------------------------------------------------------
    def _config_path(self, page: FormPage, data_dir: Path) -> Path | None:
        path = self.fixed_config or data_dir / CONFIG_NAME
        if path.exists():
            show_error(page.error, f"{path} already exists: Archivist never overwrites a configuration"
                                   f"{'' if self.fixed_config else '; choose another data folder'}.")
            return None
        return path

    def _network(self, page) -> dict:
        v = self.engine_settings
        return dict(torrent_port=int(v["torrent_port"]), waku_port=int(v["waku_port"]),
                    loopback=page.place.loopback.isChecked(),
                    waku_peers=[p.strip() for p in str(v["waku_peers"]).splitlines() if p.strip()],
                    nwaku_rest_url=str(v["nwaku_rest_url"]).strip())

    def _finish(self, page: FormPage, settings, path: Path, names: dict) -> None:
        from core.node.config import ConfigError, save
        try:
            save(settings, path, names)
        except (ConfigError, OSError) as e:
            show_error(page.error, f"The configuration could not be written: {e}")
            return
        if self.fixed_config is None and path.parent != self.default_dir:
            from gui.views.settings import save as save_settings
            save_settings(self.settings, {"data_dir": str(path.parent)})   # where the next start looks
        show_error(page.error, "")
        self.config_written.emit(path)

    def create(self) -> None:
        """Owner: key file (mode 0600) in <data>/keys, channels, config; then the app starts the node."""
        from core.node.config import ConfigError, channel_chat_ids, first_run_settings
        p = self.owner
        show_error(p.error, "")
        if p.identity is None:
            show_error(p.key_error, "Generate or import the community key first.")
            return
        if p.channel.text().strip():    # typed but not added yet: what the person meant
            p._add_channel()
        cid = p.identity.community_id
        try:
            chans = channel_chat_ids(cid, p.channel_entries())
        except ConfigError as e:
            show_error(p.channel_error, sentence(e))
            return
        if not chans:
            show_error(p.channel_error, "Add at least one channel: the owner's node archives the channels listed.")
            return
        show_error(p.channel_error, "")
        data_dir = p.place.path()
        path = data_dir and self._config_path(p, data_dir)
        if not path:
            return
        key_file = data_dir / "keys" / f"{cid}.key"
        try:
            self._write_key(p.identity, key_file)
            s = first_run_settings(role="control", community_id=cid, data_dir=data_dir, name=p.name.text(),
                                   channels=[c for _, c in chans], key_file=key_file, **self._network(p))
        except (ConfigError, OSError) as e:
            show_error(p.error, sentence(e))
            return
        self._finish(p, s, path, {c: n for n, c in chans if n})

    @staticmethod
    def _write_key(ident, key_file: Path) -> None:
        from core.node.config import ConfigError
        from core.status.errors import StatusError
        from core.status.identity import CommunityIdentity
        if key_file.exists():           # the same key imported again: keep the file; another key: never replace
            try:
                same = CommunityIdentity.load(key_file).community_id == ident.community_id
            except (StatusError, OSError):
                same = False
            if not same:
                raise ConfigError(f"{key_file} exists and holds another key: it is left alone")
            return
        key_file.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(key_file.parent, 0o700)
        ident.save(key_file)

    def join(self) -> None:
        """Member: the community from the link, the policy and channels; then the app starts the node."""
        from core.node.config import ConfigError, channel_chat_ids, first_run_settings
        p = self.member
        show_error(p.error, "")
        if p.link is None:
            if not p.link_edit.text().strip():
                show_error(p.link_error, "Paste the community's share link or its public key.")
            p.link_edit.setFocus()
            return
        cid = p.link.community_id
        try:
            chans = channel_chat_ids(cid, p.channels.toPlainText().splitlines(), new_allowed=False)
        except ConfigError as e:
            show_error(p.channel_error, sentence(e))
            return
        show_error(p.channel_error, "")
        data_dir = p.place.path()
        path = data_dir and self._config_path(p, data_dir)
        if not path:
            return
        policy, start, end = p.policy()
        try:
            s = first_run_settings(role="member", community_id=cid, data_dir=data_dir,
                                   name=p.name.text() or p.link.name, channels=[c for _, c in chans], policy=policy,
                                   range_start=start, range_end=end, **self._network(p))
        except ConfigError as e:
            show_error(p.error, sentence(e))
            return
        self._finish(p, s, path, {c: n for n, c in chans if n})
