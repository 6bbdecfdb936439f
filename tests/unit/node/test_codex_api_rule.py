"""Which Codex node a community uses when its config gives no codex_api: the local node's default address
(core.codex.DEFAULT_API), for the control node, the member node and the Inspector alike, through the one client.
Before, a control node refused to start, a member node crashed with "'NoneType' object has no attribute 'rstrip'"
and the Inspector used the default."""
from __future__ import annotations

from core.codex import DEFAULT_API
from core.codex.client import CodexClient

from .support import owner


def test_the_client_takes_no_url_as_the_local_default():
    for url, want in ((None, DEFAULT_API), ("", DEFAULT_API), ("http://10.0.0.2:8080/api/storage/v1/",
                                                               "http://10.0.0.2:8080/api/storage/v1")):
        c = CodexClient(url)
        try:
            assert c.base_url == want
        finally:
            c.close()


def test_a_codex_control_node_without_codex_api_uses_the_local_node(tmp_path):
    o = owner(tmp_path)
    o.cfg.backend, o.cfg.codex_api = "codex", None
    node = o.open()
    try:
        assert node.codex_owner().client.base_url == DEFAULT_API
    finally:
        node.codex_owner().client.close()


def test_a_codex_member_without_codex_api_starts_on_the_local_node(tmp_path):
    from dataclasses import replace

    from core.node.engine import Engine
    from tests.support.codex_node import FakeClock
    o = owner(tmp_path)
    cfg = replace(o.cfg, role="member", backend="codex", codex_api=None, key_file=None)
    eng = Engine(tmp_path / "node", clock=FakeClock(1_760_000_000))
    try:
        eng.add_community(cfg).result(60)                  # raised AttributeError ('rstrip') before
        fetcher = eng.nodes[cfg.community_id].fetcher
        assert fetcher.codex.member.client.base_url == DEFAULT_API
    finally:
        eng.stop()
