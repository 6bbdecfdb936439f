"""The node's settings in the Settings dialog: each value read from the node's TOML config (the file
`archivist node --config` reads; core.node.config), shown with when a change applies, and written back with
core.node.config.save. The node reads them when it starts, so a change applies after a restart, which the dialog
offers (`restart_node`)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from PySide6.QtWidgets import (QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QSpinBox,
                               QWidget)

from core.node.config import ConfigError, NodeSettings, load, save

AFTER_RESTART = "applies after a restart"
NOW = "applies now"
_NAME_COMMENT = re.compile(r'^\s*"([^"]+)",\s*#\s*(.+)$')


def channel_names_in(path: Path) -> dict[str, str]:
    """The channel names written as comments next to their chat IDs (kept when the file is written again)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    return {m.group(1): m.group(2).strip() for m in map(_NAME_COMMENT.match, text.splitlines()) if m}


def _port(listen: str) -> int:
    _, _, p = listen.rpartition(":")
    return int(p) if p.isdigit() else 0


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
        self.waku_peers = QPlainTextEdit("\n".join(s.waku_peers))
        self.waku_peers.setPlaceholderText("one multiaddr per line (/ip4/…/tcp/…/p2p/…)")
        self.waku_peers.setFixedHeight(60)
        self.nwaku = QLineEdit(s.waku_rest_url if s.waku_backend == "nwaku-rest" else "")
        self.nwaku.setPlaceholderText("empty: the embedded Waku node; e.g. http://127.0.0.1:8645")
        self.spark = QLineEdit(s.spark_master)
        self.grace = QSpinBox()
        self.grace.setRange(0, 7 * 24 * 60)
        self.grace.setSuffix(" min")
        self.grace.setValue(s.grace_period // 60)
        self.applies: dict[str, QLabel] = {}
        form = QFormLayout(self)
        for key, label, w in (("data_dir", "Data folder:", self.data_dir),
                              ("torrent_port", "BitTorrent port:", self.torrent_port),
                              ("waku_port", "Waku port:", self.waku_port),
                              ("waku_peers", "Waku peers:", self.waku_peers),
                              ("nwaku", "nwaku REST URL:", self.nwaku),
                              ("spark_master", "Spark master:", self.spark),
                              ("grace_period", "Grace period (owner):", self.grace)):
            note = QLabel(AFTER_RESTART)
            note.setObjectName("applies")
            self.applies[key] = note
            row = QHBoxLayout()
            row.addWidget(w, 1)
            row.addWidget(note)
            form.addRow(label, row)
        self.error = QLabel("")
        self.error.setObjectName("settingsError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        form.addRow(self.error)

    def settings(self) -> NodeSettings:
        """The form's values over the loaded settings (communities and the rest unchanged)."""
        host = self.loaded.torrent_listen.rpartition(":")[0] or "0.0.0.0"
        url = self.nwaku.text().strip()
        backend = "nwaku-rest" if url else ("embedded" if self.loaded.waku_backend == "nwaku-rest"
                                            else self.loaded.waku_backend)
        text = self.data_dir.text().strip()
        return dataclasses.replace(
            self.loaded, data_dir=Path(text).expanduser() if text else self.loaded.data_dir,
            torrent_listen=f"{host}:{self.torrent_port.value()}", waku_port=self.waku_port.value(),
            waku_peers=[p.strip() for p in self.waku_peers.toPlainText().splitlines() if p.strip()],
            waku_backend=backend, waku_rest_url=url or self.loaded.waku_rest_url,
            spark_master=self.spark.text().strip() or self.loaded.spark_master,
            grace_period=self.grace.value() * 60)

    def changed(self) -> bool:
        return self.settings() != self.loaded

    def save(self) -> bool:
        """Write the TOML (atomically, checked to read back equal); False with the reason shown when it cannot."""
        if not self.changed():
            return True
        try:
            save(self.settings(), self.path, channel_names_in(self.path), overwrite=True)
            self.loaded = load(self.path)
        except (ConfigError, OSError) as e:
            self.error.setText(f"Not saved: {e}")
            self.error.setVisible(True)
            return False
        self.error.setVisible(False)
        return True


def restart_node(window, config: Path) -> None:
    """Stop the window's node (on a worker thread) and start it again from `config` (gui.app's start)."""
    from gui.app import start_node_in_background
    node, window.running_node = window.running_node, None
    if window.adapter is not None:
        window.adapter.close()
        window.adapter = None
    window.log.add("archivist.nodeRestarting", None, {"config": str(config)})
    window.ops.run(lambda ctx: node.stop() if node is not None else None, label="stop node",
                   on_done=lambda _r: start_node_in_background(window, config),
                   on_error=lambda e: window.statusBar().showMessage(f"The node did not stop: {e}", 30_000))
