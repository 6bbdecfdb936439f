"""A community on the Codex backend, through the engines: the owner uploads each archive and the index and
announces the index CID; the member gets the CID link, fetches the latest archive from its own Codex node
(which fetches from the owner's), and imports it."""
import pytest

from core.node.engine import Engine
from core.node.hydrate import reference_hydrator
from tests.support.codex_node import CodexTestNode

from .conftest import start_control
from .test_end_to_end import _drive_member, _expected


@pytest.fixture
def codex(tmp_path):
    owner = CodexTestNode(tmp_path / "codex-owner").start()
    member = CodexTestNode(tmp_path / "codex-member").start()
    member.add_peer(owner)
    yield owner, member
    member.stop()
    owner.stop()


def test_codex_community_end_to_end(pair, codex):
    owner_node, member_node = codex
    pair.control_cfg.backend, pair.control_cfg.codex_api = "codex", owner_node.url
    pair.member_cfg.backend, pair.member_cfg.codex_api = "codex", member_node.url
    pair.member_cfg.policy = "latest"
    start_control(pair)
    cid = pair.control_cfg.community_id
    control = pair.control.nodes[cid]
    owner = control.codex_owner()
    assert control.magnet == owner.index_cid and control.magnet.startswith("z")
    assert not (pair.control.paths.archive_dir / cid / "data").exists()   # no torrent files on this backend
    pair.member.add_community(pair.member_cfg).result(30)
    node = _drive_member(pair)
    latest = max(owner.entries.values(), key=lambda e: e.end)
    got = {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)}
    assert got == _expected(pair, latest.start, latest.end)
    assert node.waiting_reason.startswith("up to date")
