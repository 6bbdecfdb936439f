"""Settings with a node config: each node setting shows its value from the TOML file and when a change applies;
Save writes the TOML (core.node.config.save) and reopening shows it; a running node is restarted with the new
config by "Restart node"."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from core.node.config import ConfigError, first_run_settings, load, save
from gui.views.node_settings import AFTER_RESTART, LIVE, NOW
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
    assert f.grace.value() == 60 and f.spark.master.text() == "local[*]" and f.nwaku.text() == ""
    assert f.retention.value() == 30 and f.policy.currentData() == "all"
    assert {k for k, n in f.applies.items() if n.text() == NOW} == set(LIVE)
    assert all(n.text() == AFTER_RESTART for k, n in f.applies.items() if k not in LIVE) and len(f.applies) == 18
    f.waku_port.setValue(60123)
    f.grace.setValue(90)
    f.retention.setValue(45)
    f.policy.setCurrentIndex(f.policy.findData("latest"))
    f.torrent_peers.setPlainText("127.0.0.1:6881\n[::1]:6882\n")
    f.waku_peers.setPlainText("/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2HAmPLe7Mzm8TsYUubgCAW1aJoeFScxrLj8ppHFivPo97bUZ")
    f.nwaku.setText("http://127.0.0.1:8645")
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert dlg.result() == SettingsDialog.DialogCode.Accepted     # no running node: nothing to restart
    s = load(path)
    assert (s.waku_port, s.grace_period, s.waku_backend) == (60123, 5400, "nwaku-rest")
    assert (s.retention_period, s.default_policy, s.torrent_peers) == (45 * 86400, "latest",
                                                                       [("127.0.0.1", 6881), ("::1", 6882)])
    assert "retention_period = 3888000" in path.read_text() and 'default_policy = "latest"' in path.read_text()
    assert settings.value("engine/default_policy") == "latest"        # the join page's first choice follows
    assert s.waku_peers[0].startswith("/ip4/127.0.0.1/tcp/60000/")
    assert s.communities[0].community_id == CID and s.communities[0].policy == "all"
    assert "# general" in path.read_text()                      # the channel name comment survives
    again = SettingsDialog(settings, config=path)
    qtbot.addWidget(again)
    assert (again.node.waku_port.value(), again.node.grace.value(), again.node.retention.value()) == (60123, 90, 45)
    assert again.node.policy.currentData() == "latest"
    assert again.node.torrent_peers.toPlainText() == "127.0.0.1:6881\n[::1]:6882"
    again.node.torrent_peers.setPlainText("h:0")                  # the one rule for peers (core.node.config.peer)
    with pytest.raises(ConfigError) as e:
        again.node.settings()
    assert str(e.value).startswith("BitTorrent peer 'h:0' is not HOST:PORT")
    again.node.torrent_peers.setPlainText("127.0.0.1:6881\n[::1]:6882")
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
    dlg.node.torrent_peers.setPlainText("127.0.0.1:6881")
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert dlg.restart_btn.isVisibleTo(dlg) and "after a restart" in dlg.restart_note.text()
    assert load(path).torrent_peers == [("127.0.0.1", 6881)] and window.running_node is first   # not yet restarted
    assert first.engine.peers == ()
    dlg.restart_btn.click()
    qtbot.waitUntil(lambda: window.running_node is not None and window.running_node is not first
                    and window.adapter is not None, timeout=60_000)
    assert window.running_node.settings.torrent_peers == [("127.0.0.1", 6881)]
    assert window.running_node.engine.peers == (("127.0.0.1", 6881),)             # what the member fetches from
    qtbot.waitUntil(lambda: bool(window.adapter.snapshot) and window.adapter.snapshot[0].community_id == CID,
                    timeout=30_000)
