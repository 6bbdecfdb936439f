"""`archivist gui` with a node config: the node starts off the GUI thread and its communities appear."""
from __future__ import annotations

import pytest

from core.node.state import ArchiveSupport, Role


def test_window_starts_node_from_config(qtbot, window, tmp_path):
    pytest.importorskip("core.node.runner")
    from core.status.traffic import TrafficGenerator
    from gui.app import start_node_in_background
    gen = TrafficGenerator(seed=3, channels=2, authors=2)
    gen.community.save(tmp_path / "community.key")
    channels = ", ".join(f'"{c.chat_id}"' for c in gen.channels)
    cfg = tmp_path / "archivist.toml"
    cfg.write_text(f'''data_dir = "data"
[torrent]
listen = "127.0.0.1:0"
local = true
[waku]
backend = "none"
[[community]]
id = "{gen.community_id}"
name = "From config"
role = "control"
channels = [{channels}]
key_file = "community.key"
''')
    start_node_in_background(window, cfg)
    qtbot.waitUntil(lambda: window.communities.model.rowCount() == 1, timeout=30_000)
    c = window.communities.model.rows()[0]
    assert (c.name, c.role, c.support) == ("From config", Role.CONTROL, ArchiveSupport.ON)
    assert window.running_node is not None and (tmp_path / "data" / "state.sqlite").exists()
