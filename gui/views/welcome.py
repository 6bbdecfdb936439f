"""First run: shown when there is no node configuration. Three ways in: create a community archive (owner), join a
community from its share link (member), or open an archive in the Inspector (support staff, no node).

Owner and member end by writing the same TOML file `archivist node --config` reads (core.node.config.save) and
emitting `config_written(path)`; gui/app.py then opens the main window and starts that node. The logic (share
links, channel IDs, the settings built from the choices) is in core/; this module only gathers the choices."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QPushButton, QScrollArea, QStackedWidget, QVBoxLayout, QWidget

from gui.resources import icon
from gui.views.welcome_pages import CONFIG_NAME, FormPage, MemberPage, OwnerPage, label, sentence, show_error


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
    def _target(self, page: FormPage) -> tuple[Path, Path] | None:
        """(data folder, config path) of a filled-in page, or None with the reason shown (never overwrite)."""
        show_error(page.channel_error, "")
        data_dir = page.place.path()
        if not data_dir:
            return None
        path = self.fixed_config or data_dir / CONFIG_NAME
        if path.exists():
            show_error(page.error, f"{path} already exists: Archivist never overwrites a configuration"
                                   f"{'' if self.fixed_config else '; choose another data folder'}.")
            return None
        return data_dir, path

    def _network(self, page) -> dict:
        v = self.engine_settings
        return dict(torrent_port=int(v["torrent_port"]), waku_port=int(v["waku_port"]),
                    loopback=page.place.loopback.isChecked(),
                    waku_peers=[p.strip() for p in str(v["waku_peers"]).splitlines() if p.strip()],
                    nwaku_rest_url=str(v["nwaku_rest_url"]).strip(),
                    torrent_peers=str(v["torrent_peers"]).splitlines(), default_policy=str(v["default_policy"]),
                    spark_master=str(v.get("spark_master") or ""))

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
        target = self._target(p)
        if target is None:
            return
        data_dir, path = target
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
        target = self._target(p)
        if target is None:
            return
        data_dir, path = target
        policy, start, end = p.policy()
        try:
            s = first_run_settings(role="member", community_id=cid, data_dir=data_dir,
                                   name=p.name.text() or p.link.name, channels=[c for _, c in chans], policy=policy,
                                   range_start=start, range_end=end, **self._network(p))
        except ConfigError as e:
            show_error(p.error, sentence(e))
            return
        self._finish(p, s, path, {c: n for n, c in chans if n})
