"""retention_period, default_policy and the [spark] driver-network keys in the node's TOML: read, checked, written
back, and handed to the engine (ControlNode's retention) and to the Spark session settings."""
from __future__ import annotations

import pytest

from core.node.config import RETENTION_SECONDS, ConfigError, NodeSettings, dump, load, save


def write(tmp_path, text):
    p = tmp_path / "node.toml"
    p.write_text(text)
    return p


def test_defaults_match_the_control_node_and_are_not_written(tmp_path):
    s = load(write(tmp_path, 'data_dir = "d"\n'))
    assert s.retention_period == RETENTION_SECONDS == 30 * 24 * 3600     # spec 61: 30 days on store nodes
    assert s.grace_period == 3600
    assert (s.default_policy, s.spark_driver_host, s.spark_driver_port) == ("all", None, 0)
    text = dump(s, tmp_path)
    assert "retention_period" not in text and "default_policy" not in text and "[spark]" not in text


def test_default_policy_applies_to_members_without_their_own(tmp_path):
    s = load(write(tmp_path, 'data_dir = "d"\ndefault_policy = "latest"\nretention_period = 86400\n'
                             '[[community]]\nid = "0x02' + "aa" * 32 + '"\nrole = "member"\n'
                             '[[community]]\nid = "0x02' + "bb" * 32 + '"\nrole = "member"\npolicy = "all"\n'))
    assert [c.policy for c in s.communities] == ["latest", "all"]
    assert s.retention_period == 86400
    back = load(save(s, tmp_path / "again.toml"))
    assert (back.default_policy, back.retention_period, [c.policy for c in back.communities]) == (
        "latest", 86400, ["latest", "all"])


@pytest.mark.parametrize("text, says", [
    ('default_policy = "range"\n', "default_policy must be all or latest, not 'range'"),
    ("retention_period = -1\n", "retention_period must be 0 or more seconds, not -1"),
    ('[spark]\ndriver_port = 70000\n', "spark.driver_port must be a port number from 0 (any free port) to 65535, "
                                       "not 70000"),
    ('[spark]\nblock_manager_port = "x"\n', "spark.block_manager_port must be a port number"),
    ("[spark]\ndriver_host = 5\n", "spark.driver_host must be a host name or address in quotes, not 5"),
])
def test_bad_values_are_named(tmp_path, text, says):
    with pytest.raises(ConfigError) as e:
        load(write(tmp_path, 'data_dir = "d"\n' + text))
    assert says in str(e.value)


def test_spark_network_round_trips_and_reaches_the_session_settings(tmp_path):
    from core.node.runner import spark_settings
    s = NodeSettings(data_dir=tmp_path / "d", spark_master="spark://10.0.0.5:7077", spark_driver_host="10.0.0.9",
                     spark_driver_bind="0.0.0.0", spark_driver_port=40000, spark_block_manager_port=40001)
    back = load(save(s, tmp_path / "node.toml"))
    assert (back.spark_driver_host, back.spark_driver_bind, back.spark_driver_port,
            back.spark_block_manager_port) == ("10.0.0.9", "0.0.0.0", 40000, 40001)
    ss = spark_settings(back)
    assert ss.network() == {"spark.driver.host": "10.0.0.9", "spark.driver.bindAddress": "0.0.0.0",
                            "spark.driver.port": "40000", "spark.driver.blockManager.port": "40001"}
    assert spark_settings(NodeSettings(data_dir=tmp_path)).network() == {
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}   # local mode, any port


def test_engine_hands_retention_to_control_nodes_and_changes_it_live(tmp_path):
    from core.node.clock import FakeClock
    from core.node.community import CommunityConfig
    from core.node.engine import Engine
    from core.status.identity import CommunityIdentity
    ident = CommunityIdentity.generate()
    key = ident.save(tmp_path / "c.key")
    e = Engine(tmp_path / "node", clock=FakeClock(1_760_000_000), grace=600, retention=7 * 86400)
    try:
        e.add_community(CommunityConfig(ident.community_id, "c", "control", [], key_file=str(key))).result(30)
        node = e.nodes[ident.community_id]
        assert (node.grace, node.retention) == (600, 7 * 86400)
        for f in e.set_schedule(retention=86400):
            f.result(10)
        assert (node.grace, node.retention, e.retention) == (600, 86400, 86400)
        for f in e.set_schedule(grace=0):
            f.result(10)
        assert (node.grace, node.retention) == (0, 86400)
    finally:
        e.stop()
