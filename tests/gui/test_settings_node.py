"""Settings with a node config: each node setting shows its value from the TOML file and when a change applies;
Save writes the TOML (core.node.config.save) and reopening shows it; a running node is restarted with the new
config by "Restart node"."""
from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox

from core.node.config import first_run_settings, load, save
from gui.views.node_settings import AFTER_RESTART
from gui.views.settings import SettingsDialog

from core.status.identity import CommunityIdentity

CID = CommunityIdentity.from_hex("11" * 32).community_id


def member_config(tmp_path):
    s = first_run_settings(role="member", community_id=CID, data_dir=tmp_path / "data", name="Sample",
                           loopback=True, channels=[CID + "00000000-0000-4000-8000-000000000001"])
    return save(s, tmp_path / "data" / "archivist.toml", {CID + "00000000-0000-4000-8000-000000000001": "general"})


def test_change_save_reopen_shows_the_toml_value(qtbot, settings, tmp_path):
    path = member_config(tmp_path)
    dlg = SettingsDialog(settings, config=path)
    qtbot.addWidget(dlg)
    f = dlg.node
    assert f is not None and f.data_dir.text() == str(tmp_path / "data") and f.waku_port.value() == 0
    assert f.grace.value() == 60 and f.spark.text() == "local[*]" and f.nwaku.text() == ""
    assert all(n.text() == AFTER_RESTART for n in f.applies.values()) and len(f.applies) == 7
    f.waku_port.setValue(60123)
    f.grace.setValue(90)
    f.waku_peers.setPlainText("/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2HAmPLe7Mzm8TsYUubgCAW1aJoeFScxrLj8ppHFivPo97bUZ")
    f.nwaku.setText("http://127.0.0.1:8645")
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert dlg.result() == SettingsDialog.DialogCode.Accepted     # no running node: nothing to restart
    s = load(path)
    assert (s.waku_port, s.grace_period, s.waku_backend) == (60123, 5400, "nwaku-rest")
    assert s.waku_peers[0].startswith("/ip4/127.0.0.1/tcp/60000/")
    assert s.communities[0].community_id == CID and s.communities[0].policy == "all"
    assert "# general" in path.read_text()                      # the channel name comment survives
    again = SettingsDialog(settings, config=path)
    qtbot.addWidget(again)
    assert (again.node.waku_port.value(), again.node.grace.value()) == (60123, 90)
    assert again.node.nwaku.text() == "http://127.0.0.1:8645" and not again.restart_btn.isVisible()


def test_unreadable_config_is_said_and_nothing_written(qtbot, settings, tmp_path):
    path = tmp_path / "archivist.toml"
    path.write_text("data_dir = [\n")
    dlg = SettingsDialog(settings, config=path)
    qtbot.addWidget(dlg)
    assert dlg.node is None and dlg.node_error.text().startswith("The node config cannot be read")
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert path.read_text() == "data_dir = [\n"


def test_restart_node_uses_the_new_config(qtbot, window, tmp_path):
    from gui.app import start_node_in_background
    path = member_config(tmp_path)
    start_node_in_background(window, path)
    qtbot.waitUntil(lambda: window.running_node is not None and window.adapter is not None, timeout=60_000)
    first = window.running_node
    qtbot.waitUntil(lambda: bool(window.adapter.snapshot), timeout=30_000)
    dlg = SettingsDialog(window.settings, window, config=path)
    qtbot.addWidget(dlg)
    dlg.node.grace.setValue(120)
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert dlg.restart_btn.isVisibleTo(dlg) and "after a restart" in dlg.restart_note.text()
    assert load(path).grace_period == 7200 and window.running_node is first   # saved, not yet restarted
    dlg.restart_btn.click()
    qtbot.waitUntil(lambda: window.running_node is not None and window.running_node is not first
                    and window.adapter is not None, timeout=60_000)
    assert window.running_node.settings.grace_period == 7200
    qtbot.waitUntil(lambda: bool(window.adapter.snapshot) and window.adapter.snapshot[0].community_id == CID,
                    timeout=30_000)
