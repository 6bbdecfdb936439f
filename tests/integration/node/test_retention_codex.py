"""Retention on the Codex backend proves each deletion from the owner's local copy of the uploaded archive (the
copy keep-alive stores again): it must exist, hash to the CID the index names, decode and match its entry. A window
whose copy is missing or changed keeps its messages. Real SQLite, a local Codex test node, fake clock."""
from __future__ import annotations

import pytest

from tests.support.codex_node import CodexTestNode
from tests.unit.node.support import T0, WEEK, owner

DAY = 24 * 3600


@pytest.fixture
def codex(tmp_path):
    node = CodexTestNode(tmp_path / "codex").start()
    yield node
    node.stop()


def test_codex_retention_deletes_only_what_the_local_copies_prove(tmp_path, codex):
    o = owner(tmp_path, seed=51)
    o.cfg.backend, o.cfg.codex_api = "codex", codex.url
    node = o.open()
    msgs = list(o.gen.messages(300, start=T0, span=3 * WEEK))
    o.store(msgs)
    o.clock.set(o.oldest() + 3 * WEEK + 2 * 3600)
    node.start()
    owner_ = node.codex_owner()
    assert len(owner_.entries) == 3 and node.magnet == owner_.index_cid
    first = min(owner_.entries.values(), key=lambda e: e.start)
    second = sorted(owner_.entries.values(), key=lambda e: e.start)[1]
    (owner_.dir / "blobs" / first.cid).unlink()                                   # copy gone
    blob = owner_.dir / "blobs" / second.cid
    blob.write_bytes(blob.read_bytes()[:-1] + bytes([blob.read_bytes()[-1] ^ 1]))  # copy changed
    o.clock.advance(40 * DAY)
    deleted = node.apply_retention()
    ts = lambda m: m.timestamp_ns // 10 ** 9  # noqa: E731
    kept = {m.hash for m in msgs if ts(m) < second.end}
    assert deleted == len(msgs) - len(kept) > 0
    assert o.stored() == kept
