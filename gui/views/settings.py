"""Settings: data directory, ports, Waku peers or an nwaku REST URL, Spark master, trackers and defaults.
Stored in QSettings (the engine reads its own config; the window passes these on at start)."""
from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from core.archive.constants import DEFAULT_TRACKERS

DEFAULTS = {
    "data_dir": "",
    "torrent_port": 0,          # 0: any free port (a fixed port blocked a second Status instance, #7328)
    "waku_port": 0,
    "waku_peers": "",
    "nwaku_rest_url": "",
    "spark_master": "local[2]",
    "spark_warmup": True,       # start the JVM and a tiny job in the background at launch (~12 s, off the GUI)
    "codex_api_url": "http://127.0.0.1:8080/api/codex/v1",
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
    def __init__(self, settings: QSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.settings = settings
        v = load(settings)
        self.data_dir = QLineEdit(v["data_dir"])
        self.data_dir.setPlaceholderText("default: the platform's data folder")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        drow = QHBoxLayout()
        drow.addWidget(self.data_dir, 1)
        drow.addWidget(browse)
        self.torrent_port, self.waku_port = QSpinBox(), QSpinBox()
        for s, val in ((self.torrent_port, v["torrent_port"]), (self.waku_port, v["waku_port"])):
            s.setRange(0, 65535)
            s.setSpecialValueText("any free port")
            s.setValue(val)
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
        self.policy.addItems(["all", "latest", "range"])
        self.policy.setCurrentText(v["default_policy"])
        self.global_support = QCheckBox("Archive support for communities I own (global switch)")
        self.global_support.setChecked(v["global_archive_support"])
        form = QFormLayout()
        form.addRow("Data directory:", drow)
        form.addRow("BitTorrent port:", self.torrent_port)
        form.addRow("Waku port:", self.waku_port)
        form.addRow("Waku peers:", self.waku_peers)
        form.addRow("nwaku REST URL:", self.nwaku)
        form.addRow("Spark master:", self.spark)
        form.addRow("", self.spark_warmup)
        form.addRow("Codex node REST URL:", self.codex)
        form.addRow("Trackers:", self.trackers)
        form.addRow("New communities download:", self.policy)
        form.addRow("", self.global_support)
        note = QLabel("Port, peer and Spark changes apply at the next start.")
        note.setObjectName("explainer")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(note)
        lay.addWidget(buttons)

    def _browse(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Data directory", self.data_dir.text())
        if d:
            self.data_dir.setText(d)

    def values(self) -> dict:
        return {"data_dir": self.data_dir.text().strip(), "torrent_port": self.torrent_port.value(),
                "waku_port": self.waku_port.value(), "waku_peers": self.waku_peers.toPlainText().strip(),
                "nwaku_rest_url": self.nwaku.text().strip(), "spark_master": self.spark.text().strip(),
                "codex_api_url": self.codex.text().strip(), "spark_warmup": self.spark_warmup.isChecked(),
                "trackers": self.trackers.toPlainText().strip(), "default_policy": self.policy.currentText(),
                "global_archive_support": self.global_support.isChecked()}

    def accept(self) -> None:
        save(self.settings, self.values())
        super().accept()
