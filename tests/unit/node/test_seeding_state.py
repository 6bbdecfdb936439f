"""What the engine's snapshot says about a control node's seed, for each state the seed can be in
(core.torrent.seed.STATES). A seed that libtorrent is still checking is "starting", not "seeding, idle": members
that connect then are turned away (docs/TORRENT.md); one that has stopped is not seeding."""
from __future__ import annotations

import pytest

from core.node.clock import FakeClock
from core.node.engine import Engine
from core.node.state import SeedingState, seeding_state
from core.torrent import seed
from core.torrent.seed import SeededTorrent

from .support import T0, owner

EXPECTED = {"starting": SeedingState.STARTING, "idle": SeedingState.SEEDING_IDLE,
            "seeding-with-peers": SeedingState.SEEDING_WITH_PEERS, "not-reachable": SeedingState.NOT_REACHABLE,
            "error": SeedingState.ERROR, "stopped": SeedingState.NOT_SEEDING}


def test_every_seed_state_has_its_own_meaning():
    assert set(seed.STATES) == set(EXPECTED)
    assert {s: seeding_state(s) for s in seed.STATES} == EXPECTED
    assert seeding_state(None) == seeding_state("no such state") == SeedingState.NOT_SEEDING


@pytest.mark.parametrize("state", sorted(EXPECTED))
def test_the_engine_snapshot_shows_the_seed_state(tmp_path, state):
    o = owner(tmp_path)
    eng = Engine(tmp_path / "node", clock=FakeClock(T0))
    try:
        eng.add_community(o.cfg).result(60)
        node = eng.nodes[o.cid]
        assert eng.community_state(o.cid).seeding == SeedingState.NOT_SEEDING      # nothing seeded yet
        seeding = SeededTorrent(None, o.cid, eng.paths.archive_dir, b"")
        seeding.state, seeding.peers, seeding.uploaded = state, 2, 1234
        node.seeding = seeding
        c = eng.community_state(o.cid)
        assert (c.seeding, c.peers, c.uploaded) == (EXPECTED[state], 2, 1234)
    finally:
        eng.stop()
