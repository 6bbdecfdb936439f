"""The node's settings have their defaults written once, in the NodeSettings dataclass (fed by the protocol
constants: the settle time, Waku's message size and timestamp skew); a config file that leaves a key out gets
exactly that default. Before, from_dict repeated each default as a literal beside the dataclass's."""
from __future__ import annotations

from dataclasses import fields

from core.node.community import SETTLE_SECONDS
from core.node.config import NodeSettings, load
from core.waku.message import DEFAULT_MAX_FUTURE_S, DEFAULT_MAX_MESSAGE_SIZE


def test_a_config_that_says_nothing_gets_the_dataclasss_defaults(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n')
    got, want = load(config), NodeSettings(tmp_path)
    assert {f.name: getattr(got, f.name) for f in fields(NodeSettings)} == \
        {f.name: getattr(want, f.name) for f in fields(NodeSettings)}
    assert (want.settle_seconds, want.waku_max_message_size, want.waku_max_future_s) == (
        SETTLE_SECONDS, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_MAX_FUTURE_S)
