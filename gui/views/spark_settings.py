"""The [spark] part of the node's settings: master URL, the driver's network (for a cluster behind a firewall or
NAT), the cluster's shared-secret file and network encryption (core/pipeline/session.py, security.py). All apply
when the node (and its Spark session) restarts. A non-loopback master without authentication or encryption gets
the same warning the command line prints."""
from __future__ import annotations

from PySide6.QtWidgets import (QCheckBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
                               QSpinBox, QWidget)

from core.node.config import NodeSettings
from gui.views.path_field import path_field


def _port_box(value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(0, 65535)
    box.setSpecialValueText("any free port")
    box.setValue(value)
    return box


class SparkBox(QGroupBox):
    """One row per [spark] key; `values()` gives the NodeSettings fields, `check()` the reason not to save."""

    def __init__(self, s: NodeSettings, note, parent: QWidget | None = None):
        super().__init__("Spark (builds archives on the owner's computer or a cluster)", parent)
        self.setObjectName("sparkSettings")
        self.master = QLineEdit(s.spark_master)
        self.master.setPlaceholderText("local[*] (this computer) or spark://HOST:7077")
        self.driver_host = QLineEdit(s.spark_driver_host or "")
        self.driver_host.setPlaceholderText("cluster: default is the address that routes to the master")
        self.driver_bind = QLineEdit(s.spark_driver_bind or "")
        self.driver_bind.setPlaceholderText("default: the driver host (differs behind NAT)")
        self.driver_port, self.block_manager_port = _port_box(s.spark_driver_port), _port_box(
            s.spark_block_manager_port)
        self.secret_file, srow = path_field(
            self, s.spark_secret_file or "", "a file with mode 0600 holding the cluster's shared secret",
            lambda w, cur: QFileDialog.getOpenFileName(w, "Spark secret file", cur)[0])
        self.stage_dir = QLineEdit(s.spark_stage_dir or "")
        self.stage_dir.setPlaceholderText("cluster: a folder shared by this computer and every worker (e.g. NFS)")
        self.encrypt = QCheckBox("Encrypt Spark's network traffic (needs the secret file)")
        self.encrypt.setChecked(s.spark_encrypt)
        self.warning = QLabel("")
        self.warning.setObjectName("settingsError")
        self.warning.setWordWrap(True)
        self.warning.setVisible(False)
        self.applies: dict[str, QLabel] = {}
        form = QFormLayout(self)
        for key, label, w in (("spark_master", "Master:", self.master),
                              ("spark_driver_host", "Driver host:", self.driver_host),
                              ("spark_driver_bind", "Driver bind address:", self.driver_bind),
                              ("spark_driver_port", "Driver port:", self.driver_port),
                              ("spark_block_manager_port", "Block manager port:", self.block_manager_port),
                              ("spark_secret_file", "Secret file:", srow),
                              ("spark_stage_dir", "Stage folder:", self.stage_dir),
                              ("spark_encrypt", "", self.encrypt)):
            self.applies[key] = lab = note()
            row = QHBoxLayout()
            row.addWidget(w, 1) if isinstance(w, QWidget) else row.addLayout(w, 1)
            row.addWidget(lab)
            form.addRow(label, row)
        form.addRow(self.warning)
        for edit in (self.master, self.secret_file):
            edit.textChanged.connect(self._warn)
        self.encrypt.toggled.connect(self._warn)
        self._warn()

    def values(self, loaded: NodeSettings) -> dict:
        return dict(spark_master=self.master.text().strip() or loaded.spark_master,
                    spark_driver_host=self.driver_host.text().strip() or None,
                    spark_driver_bind=self.driver_bind.text().strip() or None,
                    spark_driver_port=self.driver_port.value(),
                    spark_block_manager_port=self.block_manager_port.value(),
                    spark_secret_file=self.secret_file.text().strip() or None,
                    spark_stage_dir=self.stage_dir.text().strip() or None,
                    spark_encrypt=self.encrypt.isChecked())

    def check(self) -> str | None:
        """Why these values cannot work (one sentence), read before anything is written; None when they can."""
        from core.pipeline.security import SparkSecurityError, read_secret
        from core.pipeline.cluster_conf import master_problem
        master = self.master.text().strip()
        if master and (problem := master_problem(master)):
            return problem
        path = self.secret_file.text().strip()
        if path:
            try:
                read_secret(path)       # exists, ours, 0600: checked now rather than when a build starts
            except SparkSecurityError as e:
                return str(e)
        return None

    def _warn(self) -> None:
        from core.pipeline.security import insecure_master_warning
        w = insecure_master_warning(self.master.text().strip(), secret=bool(self.secret_file.text().strip()),
                                    encrypt=self.encrypt.isChecked())
        text = w.removeprefix("warning: ") if w else ""
        self.warning.setText(text[:1].upper() + text[1:])
        self.warning.setVisible(bool(w))
