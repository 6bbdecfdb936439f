"""Settings. With a node config (archivist.toml): the node's settings read from and saved to that file
(gui/views/node_settings.py), each marked "applies now" or "applies after a restart", with a "Restart node" button
when the window runs the node. Window settings (Codex URL, Spark warm-up, trackers, the global archive-support
switch) stay in QSettings; before the first run (no config yet) the node's rows are QSettings too, and the
welcome screen uses them."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from core.archive.constants import DEFAULT_TRACKERS
from core.codex import DEFAULT_API
from core.node.state import DownloadPolicy
from core.pipeline import DEFAULT_MASTER
from gui.views.path_field import path_field

DEFAULTS = {
    "data_dir": "",
    "torrent_port": 0,          # 0: any free port (a fixed port blocked a second Status instance, #7328)
    "torrent_peers": "",        # HOST:PORT of known seeders, one a line
    "waku_port": 0,
    "waku_peers": "",
    "nwaku_rest_url": "",
    "spark_master": DEFAULT_MASTER,     # the node's default (core.pipeline.session), also before the first run
    "spark_warmup": True,       # start the JVM and a tiny job in the background at launch (~12 s, off the GUI)
    "codex_api_url": DEFAULT_API,
    "trackers": "\n".join(DEFAULT_TRACKERS),
    "default_policy": "all",
    "global_archive_support": True,
}


def load(settings: QSettings) -> dict:
    out = {}
    for k, d in DEFAULTS.items():
        v = settings.value(f"engine/{k}", d)
        if isinstance(d, bool):
            v = v in (True, "true", "1", 1)
        elif isinstance(d, int):
            v = int(v)
        out[k] = v
    return out


def save(settings: QSettings, values: dict) -> None:
    for k, v in values.items():
        settings.setValue(f"engine/{k}", v)
    settings.sync()


class SettingsDialog(QDialog):
    def __init__(self, settings: QSettings, parent: QWidget | None = None, config: Path | str | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.settings = settings
        self.window_ = parent
        self.config = Path(config) if config else _config_of(settings)
        self.saved = False
        v = load(settings)
        self.data_dir, drow = path_field(self, v["data_dir"], "default: the platform's data folder",
                                         lambda w, cur: QFileDialog.getExistingDirectory(w, "Data directory", cur))
        self.torrent_port, self.waku_port = QSpinBox(), QSpinBox()
        for s, val in ((self.torrent_port, v["torrent_port"]), (self.waku_port, v["waku_port"])):
            s.setRange(0, 65535)
            s.setSpecialValueText("any free port")
            s.setValue(val)
        self.torrent_peers = QPlainTextEdit(v["torrent_peers"])
        self.torrent_peers.setPlaceholderText("HOST:PORT of known seeders, one per line (optional)")
        self.torrent_peers.setFixedHeight(48)
        self.waku_peers = QPlainTextEdit(v["waku_peers"])
        self.waku_peers.setPlaceholderText("one multiaddr per line (/ip4/…/tcp/…/p2p/…)")
        self.waku_peers.setFixedHeight(60)
        self.nwaku = QLineEdit(v["nwaku_rest_url"])
        self.nwaku.setPlaceholderText("empty: embedded Waku node; e.g. http://127.0.0.1:8645")
        self.spark = QLineEdit(v["spark_master"])
        self.codex = QLineEdit(v["codex_api_url"])
        self.spark_warmup = QCheckBox("Start Spark in the background when Archivist starts")
        self.spark_warmup.setChecked(v["spark_warmup"])
        self.trackers = QPlainTextEdit(v["trackers"])
        self.trackers.setFixedHeight(60)
        self.policy = QComboBox()
        self.policy.addItems([p.value for p in DownloadPolicy])      # core.torrent.selection.MODES
        self.policy.setCurrentText(v["default_policy"])
        self.global_support = QCheckBox("Archive support for communities I own (global switch)")
        self.global_support.setChecked(v["global_archive_support"])
        self.node = None                  # NodeSettingsForm when the node's TOML config exists
        self.node_error = QLabel("")
        self.node_error.setObjectName("settingsError")
        self.node_error.setWordWrap(True)
        self.node_error.setVisible(False)
        if self.config is not None and self.config.exists():
            from core.node.config import ConfigError
            from gui.views.node_settings import NodeSettingsForm
            try:
                self.node = NodeSettingsForm(self.config)
            except ConfigError as e:
                self.node_error.setText(f"The node config cannot be read, so its settings are not shown: {e}")
                self.node_error.setVisible(True)
        form = QFormLayout()
        if self.node is None:             # before the first run: the values the welcome screen starts from
            form.addRow("Data directory:", drow)
            form.addRow("BitTorrent port:", self.torrent_port)
            form.addRow("BitTorrent peers:", self.torrent_peers)
            form.addRow("Waku port:", self.waku_port)
            form.addRow("Waku peers:", self.waku_peers)
            form.addRow("nwaku REST URL:", self.nwaku)
            form.addRow("Spark master:", self.spark)
        form.addRow("", self.spark_warmup)
        form.addRow("Codex node REST URL:", self.codex)
        form.addRow("Trackers:", self.trackers)
        if self.node is None:             # with a config: the node's default_policy, in the node's rows
            form.addRow("New communities download:", self.policy)
        form.addRow("", self.global_support)
        note = QLabel("The Codex URL and the archive-support switch apply now; the Spark warm-up and trackers at "
                      "the next start." + ("" if self.node else " Ports, peers and Spark apply at the next start."))
        note.setObjectName("explainer")
        note.setWordWrap(True)
        self.restart_note = QLabel("")
        self.restart_note.setObjectName("restartNote")
        self.restart_note.setWordWrap(True)
        self.restart_btn = QPushButton("Restart node")
        self.restart_btn.setObjectName("restartNode")
        self.restart_btn.clicked.connect(self.restart)
        self.restart_btn.setVisible(False)
        rrow = QHBoxLayout()
        rrow.addWidget(self.restart_note, 1)
        rrow.addWidget(self.restart_btn)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.node_error)
        if self.node is not None:
            lay.addWidget(self.node)
        lay.addLayout(form)
        lay.addWidget(note)
        lay.addLayout(rrow)
        lay.addWidget(self.buttons)

    def values(self) -> dict:
        return {"data_dir": self.data_dir.text().strip(), "torrent_port": self.torrent_port.value(),
                "torrent_peers": self.torrent_peers.toPlainText().strip(),
                "waku_port": self.waku_port.value(), "waku_peers": self.waku_peers.toPlainText().strip(),
                "nwaku_rest_url": self.nwaku.text().strip(), "spark_master": self.spark.text().strip(),
                "codex_api_url": self.codex.text().strip(), "spark_warmup": self.spark_warmup.isChecked(),
                "trackers": self.trackers.toPlainText().strip(), "default_policy": self.policy.currentText(),
                "global_archive_support": self.global_support.isChecked()}

    def accept(self) -> None:
        """Save: QSettings, and the node's TOML. What applies now goes to the running engine; when the running
        node must restart to use the rest, the dialog stays open with "Restart node" (Close keeps the old node
        running until the next start)."""
        node_changed = self.node is not None and self.node.changed()
        if self.node is not None and not self.node.save():
            return
        values = self.values()
        if self.node is not None:          # the node's rows come from the TOML: keep the QSettings copy in step
            from core.node.config import listen_address
            from core.torrent.magnet import format_peer
            n = self.node.loaded
            values.update(torrent_port=listen_address(n.torrent_listen)[1], waku_port=n.waku_port,
                          waku_peers="\n".join(n.waku_peers), spark_master=n.spark_master,
                          nwaku_rest_url=n.waku_rest_url if n.waku_backend == "nwaku-rest" else "",
                          torrent_peers="\n".join(format_peer(h, p) for h, p in n.torrent_peers),
                          default_policy=n.default_policy)
            values.pop("data_dir")         # the data directory in QSettings says where the TOML is: unchanged
        save(self.settings, values)
        self.saved = True
        running = getattr(self.window_, "running_node", None)
        if node_changed and running is not None:
            from gui.views.node_settings import apply_now
            apply_now(running, self.node.loaded)
        if node_changed and running is not None and self.node.needs_restart(running.settings):
            self.restart_note.setText(f"Saved to {self.config.name}. The node uses the new settings after a "
                                      "restart.")
            self.restart_btn.setVisible(True)
            self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(False)
            self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setText("Close")
            return
        super().accept()

    def reject(self) -> None:
        if self.saved:                     # "Close" after saving: the window applies what applies now
            super().accept()
        else:
            super().reject()

    def restart(self) -> None:
        from gui.views.node_settings import restart_node
        restart_node(self.window_, self.config)
        super().accept()


def _config_of(settings: QSettings) -> Path | None:
    """The node config the window uses ($ARCHIVIST_CONFIG, else the data directory's archivist.toml)."""
    return node_config_target(settings)


def fixed_config_path(config: Path | str | None = None) -> Path | None:
    """A config path fixed from outside (`archivist gui --config`, else $ARCHIVIST_CONFIG), or None."""
    if config:
        return Path(config).expanduser().absolute()
    env = os.environ.get("ARCHIVIST_CONFIG")
    return Path(env).expanduser().absolute() if env else None


def node_config_target(settings, config: Path | str | None = None) -> Path:
    """Where the node's TOML config is: the fixed path, else `archivist.toml` in the data directory (Settings;
    empty there means platformdirs' user data directory, which follows $XDG_DATA_HOME)."""
    fixed = fixed_config_path(config)
    if fixed is not None:
        return fixed
    data_dir = load(settings)["data_dir"]
    if not data_dir:
        from core.node.config import default_data_dir
        data_dir = default_data_dir()
    return Path(data_dir) / "archivist.toml"

