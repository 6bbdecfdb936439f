"""Settings reach the engine: from an empty home folder an owner's node runs in the window; grace period and
retention changed in the Settings dialog are in the TOML and in the running engine at once (no restart), and the
[spark] fields (master, driver network, secret file, encryption) are in the TOML and, after the offered restart,
in the node's Spark settings. A secret file others can read is refused before anything is written."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QDialogButtonBox

from core.node.config import first_run_settings, load, save
from gui.views.settings import SettingsDialog

CHANNEL = "00000000-0000-4000-8000-000000000001"


def owner_config(home):
    from core.status.identity import CommunityIdentity
    ident = CommunityIdentity.generate()
    cid = ident.community_id
    data = home / ".local" / "share" / "archivist"
    key = ident.save(data / "keys" / f"{cid}.key")
    s = first_run_settings(role="control", community_id=cid, data_dir=data, name="Night Owls", loopback=True,
                           channels=[cid + CHANNEL], key_file=key)
    return cid, save(s, data / "archivist.toml", {cid + CHANNEL: "general"})


def running(qtbot, window, path):
    from gui.app import start_node_in_background
    start_node_in_background(window, path)
    qtbot.waitUntil(lambda: window.running_node is not None and window.adapter is not None, timeout=60_000)
    qtbot.waitUntil(lambda: bool(window.adapter.snapshot), timeout=30_000)
    return window.running_node


def save_click(dlg) -> None:
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()


def test_grace_and_retention_reach_the_running_engine_at_once(qtbot, home, window):
    cid, path = owner_config(home)
    node = running(qtbot, window, path)
    control = node.engine.nodes[cid]
    assert (control.grace, control.retention) == (3600, 30 * 86400)      # the defaults, from the file
    dlg = SettingsDialog(window.settings, window, config=path)
    qtbot.addWidget(dlg)
    dlg.node.grace.setValue(15)
    dlg.node.retention.setValue(90)
    save_click(dlg)
    assert dlg.result() == SettingsDialog.DialogCode.Accepted and not dlg.restart_btn.isVisibleTo(dlg)
    s = load(path)
    assert (s.grace_period, s.retention_period) == (900, 90 * 86400)
    qtbot.waitUntil(lambda: (control.grace, control.retention) == (900, 90 * 86400), timeout=5_000)
    assert window.running_node is node and (node.engine.grace, node.engine.retention) == (900, 90 * 86400)
    assert (node.settings.grace_period, node.settings.retention_period) == (900, 90 * 86400)


def test_spark_fields_are_saved_and_used_after_the_restart(qtbot, home, window):
    cid, path = owner_config(home)
    first = running(qtbot, window, path)
    assert window.spark_owner is not None and window.spark_owner.settings.master == "local[*]"
    secret = home / "spark.secret"
    secret.write_text("s3cret-shared-by-the-cluster-0123456789\n")
    secret.chmod(0o644)
    dlg = SettingsDialog(window.settings, window, config=path)
    qtbot.addWidget(dlg)
    sp = dlg.node.spark
    sp.master.setText("spark://10.20.30.40:7077")
    assert sp.warning.isVisibleTo(dlg) and "no authentication" in sp.warning.text()
    sp.driver_host.setText("10.20.30.1")
    sp.driver_bind.setText("0.0.0.0")
    sp.driver_port.setValue(40123)
    sp.block_manager_port.setValue(40124)
    sp.secret_file.setText(str(secret))
    sp.encrypt.setChecked(True)
    sp.stage_dir.setText(str(home / "nfs" / "stage"))
    assert not sp.warning.isVisibleTo(dlg)
    before = path.read_text()
    save_click(dlg)                                   # others can read the secret: refused, nothing written
    assert dlg.node.error.isVisibleTo(dlg) and "readable or writable by others" in dlg.node.error.text()
    assert path.read_text() == before and dlg.result() != SettingsDialog.DialogCode.Accepted
    secret.chmod(0o600)
    save_click(dlg)
    assert not dlg.node.error.isVisibleTo(dlg)
    s = load(path)
    assert (s.spark_master, s.spark_driver_host, s.spark_driver_bind, s.spark_driver_port,
            s.spark_block_manager_port, s.spark_secret_file, s.spark_encrypt) == (
        "spark://10.20.30.40:7077", "10.20.30.1", "0.0.0.0", 40123, 40124, str(secret), True)
    assert s.spark_stage_dir == str(home / "nfs" / "stage")
    assert dlg.restart_btn.isVisibleTo(dlg) and window.running_node is first
    dlg.restart_btn.click()
    qtbot.waitUntil(lambda: window.running_node is not None and window.running_node is not first
                    and window.adapter is not None and window.spark_owner is not None, timeout=60_000)
    ss = window.spark_owner.settings                  # the session the node's builder runs on (no JVM yet)
    assert (ss.master, ss.driver_host, ss.driver_bind, ss.driver_port, ss.block_manager_port, ss.encrypt) == (
        "spark://10.20.30.40:7077", "10.20.30.1", "0.0.0.0", 40123, 40124, True)
    assert ss.secret_file == str(secret) and window.running_node.engine.builder is not None
    assert ss.stage_dir == str(home / "nfs" / "stage")
    assert ss.network() == {"spark.driver.host": "10.20.30.1", "spark.driver.bindAddress": "0.0.0.0",
                            "spark.driver.port": "40123", "spark.driver.blockManager.port": "40124"}
    assert os.stat(secret).st_mode & 0o077 == 0
