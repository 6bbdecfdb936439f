"""The node's settings in the Settings dialog: each value read from the node's TOML config (the file
`archivist node --config` reads; core.node.config), shown with when a change applies, and written back with
core.node.config.save. Grace period and retention reach the running engine at once (`Engine.set_schedule`); the
node reads the rest when it starts, so those apply after a restart, which the dialog offers (`restart_node`)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from PySide6.QtWidgets import (QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit,
                               QSpinBox, QVBoxLayout, QWidget)

from core.node.config import DEFAULT_POLICIES, ConfigError, NodeSettings, listen_address, load, peer, save
from core.torrent.magnet import format_peer
from core.waku.networks import NETWORKS
from gui.models import POLICY_WORDS
from gui.views.spark_settings import SparkBox

AFTER_RESTART = "applies after a restart"
NOW = "applies now"
LIVE = ("grace_period", "retention_period")          # what Engine.set_schedule changes in a running node
DAY = 24 * 3600
POLICIES = tuple((code, POLICY_WORDS[code]) for code in DEFAULT_POLICIES)   # a node default needs no dates
_NAME_COMMENT = re.compile(r'^\s*"([^"]+)",\s*#\s*(.+)$')


def channel_names_in(path: Path) -> dict[str, str]:
    """The channel names written as comments next to their chat IDs (kept when the file is written again)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    return {m.group(1): m.group(2).strip() for m in map(_NAME_COMMENT.match, text.splitlines()) if m}


def _port(listen: str) -> int:
    return listen_address(listen)[1]


class NodeSettingsForm(QGroupBox):
    """One row per node setting: its current value from the TOML file and when a change applies."""

    def __init__(self, path: Path, parent: QWidget | None = None):
        super().__init__(f"Node ({path.name})", parent)
        self.setObjectName("nodeSettings")
        self.path = Path(path)
        self.loaded: NodeSettings = load(self.path)       # ConfigError: the caller shows the file's problem
        s = self.loaded
        self.data_dir = QLineEdit(str(s.data_dir))
        self.torrent_port, self.waku_port = QSpinBox(), QSpinBox()
        for box, val in ((self.torrent_port, _port(s.torrent_listen)), (self.waku_port, s.waku_port)):
            box.setRange(0, 65535)
            box.setSpecialValueText("any free port")
            box.setValue(val)
        self.network = QComboBox()           # [waku] network, what `archivist node` reads (core/waku/networks.py)
        self.network.setObjectName("wakuNetwork")
        for name, preset in NETWORKS.items():
            self.network.addItem(preset.label, name)
        self.network.setCurrentIndex(self.network.findData(s.waku_network))
        self.network_about = QLabel()
        self.network_about.setObjectName("networkAbout")
        self.network_about.setWordWrap(True)
        self.network.currentIndexChanged.connect(self._show_network)
        self._show_network()
        self.waku_peers = QPlainTextEdit("\n".join(s.waku_peers))
        self.waku_peers.setPlaceholderText("one multiaddr per line (/ip4/…/tcp/…/p2p/…)")
        self.waku_peers.setFixedHeight(60)
        self.nwaku = QLineEdit(s.waku_rest_url if s.waku_backend == "nwaku-rest" else "")
        self.nwaku.setPlaceholderText("empty: the embedded Waku node; e.g. http://127.0.0.1:8645")
        self.torrent_peers = QPlainTextEdit("\n".join(format_peer(h, p) for h, p in s.torrent_peers))
        self.torrent_peers.setPlaceholderText("HOST:PORT of known seeders, one per line (optional)")
        self.torrent_peers.setFixedHeight(48)
        self.grace = QSpinBox()
        self.grace.setRange(0, 7 * 24 * 60)
        self.grace.setSuffix(" min")
        self.grace.setValue(s.grace_period // 60)
        self.retention = QSpinBox()
        self.retention.setRange(0, 100 * 365)
        self.retention.setSuffix(" days")
        self.retention.setSpecialValueText("as soon as archived")
        self.retention.setValue(s.retention_period // DAY)
        self.retention.setToolTip("Messages older than this leave the owner's message database once an archive "
                                  "that holds them has been verified; the archives keep them.")
        self.policy = QComboBox()
        for value, text in POLICIES:
            self.policy.addItem(text, value)
        self.policy.setCurrentIndex(max(0, self.policy.findData(s.default_policy)))
        self.policy.setToolTip("What a member community downloads when the config names no policy for it, and the "
                               "first choice when joining one.")
        self.applies: dict[str, QLabel] = {}
        form = QFormLayout()
        for key, label, w in (("data_dir", "Data folder:", self.data_dir),
                              ("torrent_port", "BitTorrent port:", self.torrent_port),
                              ("torrent_peers", "BitTorrent peers:", self.torrent_peers),
                              ("waku_network", "Network:", self.network),
                              ("waku_port", "Waku port:", self.waku_port),
                              ("waku_peers", "Waku peers:", self.waku_peers),
                              ("nwaku", "nwaku REST URL:", self.nwaku),
                              ("grace_period", "Grace period (owner):", self.grace),
                              ("retention_period", "Keep messages (owner):", self.retention),
                              ("default_policy", "Members download by default:", self.policy)):
            self.applies[key] = note = self._note(NOW if key in LIVE else AFTER_RESTART)
            row = QHBoxLayout()
            row.addWidget(w, 1)
            row.addWidget(note)
            form.addRow(label, row)
            if key == "waku_network":
                form.addRow("", self.network_about)
        self.spark = SparkBox(s, lambda: self._note(AFTER_RESTART))
        self.applies.update(self.spark.applies)
        self.error = QLabel("")
        self.error.setObjectName("settingsError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.spark)
        lay.addWidget(self.error)

    def _show_network(self) -> None:
        self.network_about.setText(NETWORKS[self.network.currentData()].about)

    @staticmethod
    def _note(text: str) -> QLabel:
        note = QLabel(text)
        note.setObjectName("applies")
        return note

    @staticmethod
    def _kept(box: QSpinBox, seconds: int, unit: int) -> int:
        """The box's value in seconds; an untouched box keeps the file's exact value (not rounded to the unit)."""
        return seconds if box.value() == seconds // unit else box.value() * unit

    def settings(self) -> NodeSettings:
        """The form's values over the loaded settings (communities and the rest unchanged). Raises ConfigError
        for a BitTorrent peer that is not HOST:PORT."""
        host = listen_address(self.loaded.torrent_listen)[0]
        url = self.nwaku.text().strip()
        backend = "nwaku-rest" if url else ("embedded" if self.loaded.waku_backend == "nwaku-rest"
                                            else self.loaded.waku_backend)
        text = self.data_dir.text().strip()
        return dataclasses.replace(
            self.loaded, data_dir=Path(text).expanduser() if text else self.loaded.data_dir,
            torrent_listen=format_peer(host, self.torrent_port.value()), waku_port=self.waku_port.value(),
            waku_network=self.network.currentData(),
            waku_peers=[p.strip() for p in self.waku_peers.toPlainText().splitlines() if p.strip()],
            waku_backend=backend, waku_rest_url=url or self.loaded.waku_rest_url,
            torrent_peers=self._peers(), grace_period=self._kept(self.grace, self.loaded.grace_period, 60),
            retention_period=self._kept(self.retention, self.loaded.retention_period, DAY),
            default_policy=self.policy.currentData(), **self.spark.values(self.loaded))

    def _peers(self) -> list[tuple[str, int]]:
        return [peer(line) for line in self.torrent_peers.toPlainText().splitlines() if line.strip()]

    def changed(self) -> bool:
        try:
            return self.settings() != self.loaded
        except ConfigError:
            return True               # save() says why

    def needs_restart(self, old: NodeSettings) -> bool:
        """Whether the saved settings differ from `old` (what the running node started with) in more than what
        applies now."""
        same = {k: getattr(old, k) for k in (*LIVE, "communities")}   # the form never edits communities
        return dataclasses.replace(self.loaded, **same) != old

    def save(self) -> bool:
        """Write the TOML (atomically, checked to read back equal); False with the reason shown when it cannot."""
        if not self.changed():
            return True
        try:
            why = self.spark.check()
            if why:
                raise ConfigError(why)
            save(self.settings(), self.path, channel_names_in(self.path), overwrite=True)
            self.loaded = load(self.path)
        except (ConfigError, OSError) as e:
            self.error.setText(f"Not saved: {e}")
            self.error.setVisible(True)
            return False
        self.error.setVisible(False)
        return True


def apply_now(running, new: NodeSettings) -> dict:
    """Hand the running node what applies without a restart (grace period, retention); returns what changed.
    `running.settings` follows, so a later comparison sees what the node now uses."""
    old = running.settings
    changes = {k: getattr(new, k) for k in LIVE if getattr(new, k) != getattr(old, k)}
    if changes:
        running.engine.set_schedule(grace=changes.get("grace_period"), retention=changes.get("retention_period"))
        for k, v in changes.items():
            setattr(old, k, v)
    return changes


def restart_node(window, config: Path) -> None:
    """Stop the window's node (on a worker thread) and start it again from `config` (gui.app's start)."""
    from gui.app import start_node_in_background
    node, window.running_node = window.running_node, None
    if window.adapter is not None:
        window.adapter.close()
        window.adapter = None
    window.log.add("archivist.nodeRestarting", None, {"config": str(config)})

    def stop(_ctx) -> None:
        if node is not None:
            node.stop()
        owner = window.spark_owner         # the process's one Spark session: new [spark] settings need a new one
        if owner is not None:
            from core.node.runner import spark_settings
            try:
                wanted = spark_settings(load(config))
            except ConfigError:
                return                     # the node's start says what is wrong with the file
            if wanted != owner.settings:
                from gui import spark_share
                spark_share.release(window, force=True)
    window.ops.run(stop, label="stop node",
                   on_done=lambda _r: start_node_in_background(window, config),
                   on_error=lambda e: window.statusBar().showMessage(f"The node did not stop: {e}", 30_000))
