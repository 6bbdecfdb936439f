"""Settings -> Network (Status fleet / Local): the choice shown is the config's `[waku] network`, Save writes that
key, and the node that `archivist node` would build from the file uses the preset (cluster, shards, enrtree)."""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialogButtonBox, QLabel

from core.node.config import first_run_settings, load, save
from core.node.runner import waku_node_config
from core.status.identity import CommunityIdentity
from core.waku.networks import STATUS_PROD_ENRTREE
from gui.views.node_settings import AFTER_RESTART
from gui.views.settings import SettingsDialog

CID = CommunityIdentity.from_hex("22" * 32).community_id
CHAT = CID + "00000000-0000-4000-8000-000000000001"


def config(tmp_path):
    s = first_run_settings(role="member", community_id=CID, data_dir=tmp_path / "data", name="Sample",
                           loopback=True, channels=[CHAT])
    return save(s, tmp_path / "data" / "archivist.toml", {CHAT: "general"})


def shown(dlg) -> tuple[str, list[str], str]:
    combo = dlg.findChild(QComboBox, "wakuNetwork")
    about = dlg.findChild(QLabel, "networkAbout")
    return combo.currentText(), [combo.itemText(i) for i in range(combo.count())], about.text()


def test_choosing_the_status_fleet_writes_the_network_key_the_node_reads(qtbot, settings, tmp_path):
    path = config(tmp_path)
    assert load(path).waku_network == "local"
    dlg = SettingsDialog(settings, config=path)
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.waitExposed(dlg)
    assert dlg.findChild(QComboBox, "wakuNetwork").isVisible() and dlg.findChild(QLabel, "networkAbout").isVisible()
    text, items, about = shown(dlg)
    assert (text, items) == ("Local", ["Status fleet", "Local"])
    assert about.startswith("Only the Waku peers listed here") and "no discovery" in about
    assert dlg.node.applies["waku_network"].text() == AFTER_RESTART

    combo = dlg.findChild(QComboBox, "wakuNetwork")
    combo.setCurrentIndex(combo.findText("Status fleet"))
    text, _, about = shown(dlg)
    assert text == "Status fleet" and "shards 32, 64, 128 and 256" in about and "DNS tree" in about
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert dlg.result() == SettingsDialog.DialogCode.Accepted

    written = path.read_text()
    waku = written.split("[waku]", 1)[1].split("\n\n", 1)[0]
    assert 'network = "status"' in waku.splitlines()
    s = load(path)
    assert s.waku_network == "status" and s.communities[0].community_id == CID and "# general" in written
    nc = waku_node_config(s)
    assert (nc.cluster_id, nc.shards, nc.enrtree_url) == (16, (32, 64, 128, 256), STATUS_PROD_ENRTREE)
    assert nc.pubsub_topics == tuple(f"/waku/2/rs/16/{n}" for n in (32, 64, 128, 256))

    again = SettingsDialog(settings, config=path)
    qtbot.addWidget(again)
    assert shown(again)[0] == "Status fleet"
    combo = again.findChild(QComboBox, "wakuNetwork")
    combo.setCurrentIndex(combo.findText("Local"))
    again.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert load(path).waku_network == "local" and 'network = ' not in path.read_text()   # the default is left out
    assert waku_node_config(load(path)).enrtree_url is None


def test_an_unknown_network_in_the_file_is_said_and_nothing_written(qtbot, settings, tmp_path):
    path = config(tmp_path)
    bad = path.read_text().replace("[waku]\n", '[waku]\nnetwork = "mainnet"\n')
    path.write_text(bad)
    dlg = SettingsDialog(settings, config=path)
    qtbot.addWidget(dlg)
    assert dlg.node is None and dlg.findChild(QComboBox, "wakuNetwork") is None
    assert dlg.node_error.text() == ("The node config cannot be read, so its settings are not shown: waku.network "
                                     "must be local or status, not 'mainnet'")
    dlg.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert path.read_text() == bad
