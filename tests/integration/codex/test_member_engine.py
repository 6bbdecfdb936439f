"""The member engine (core/node MemberNode) with the Codex fetcher: link envelope -> settle -> fetch -> hydrate."""
import pytest

from core.codex.backend import CodexOwner
from core.codex.fetcher import CodexFetcher, LinkFetcher
from core.node import events as E
from core.node.clock import FakeClock
from core.node.community import CommunityConfig, NodePaths
from core.node.hydrate import reference_hydrator
from core.node.member import MemberNode
from core.status.application_metadata import archive_link_envelopes
from core.status.topics import archive_link_chat_ids
from core.storage import waku_messages
from core.storage.archive_state import ArchiveStateDB
from core.storage.member_history import MemberHistory
from core.synth import community_key, synthesize


@pytest.fixture
def world(tmp_path, codex_nodes, clients):
    synth = synthesize(tmp_path / "s.db", messages=500, weeks=4, channels=2, seed=21)
    topics = [bytes.fromhex(t[2:]) for t in synth.topics]
    owner_node, member_node = codex_nodes("o"), codex_nodes("m")
    member_node.add_peer(owner_node)
    pub = CodexOwner(clients(owner_node.url), tmp_path / "owner", synth.community_id).publish(
        synth.path, topics, end=synth.end + 1)
    clock = FakeClock(synth.end + 100)
    paths = NodePaths(tmp_path / "member")
    state = ArchiveStateDB(paths.ensure().state_db)
    history = MemberHistory(paths.history_db)
    fetcher = CodexFetcher(clients(member_node.url, read_timeout=10))
    yield synth, topics, pub, clock, paths, state, history, fetcher
    fetcher.close()
    history.close()
    state.close()


def test_member_node_fetches_latest_from_codex_and_hydrates(world):
    synth, topics, pub, clock, paths, state, history, fetcher = world
    bus = E.EventBus()
    cfg = CommunityConfig(synth.community_id, policy="latest", channel_chat_ids=synth.chat_ids)
    node = MemberNode(cfg, paths, state, bus, clock, fetcher=LinkFetcher(codex=fetcher),
                      hydrator=reference_hydrator(history), settle=20)
    (topic, envelope), _ = archive_link_envelopes(community_key(21), int(clock.now() * 1000), pub.index_cid)
    mag_chat, _ = archive_link_chat_ids(synth.community_id)
    assert node.on_envelope(envelope, mag_chat).accepted
    node.tick()
    assert node.job is None                      # still settling
    clock.advance(21)
    node.tick()
    assert node.job is not None and node.job.wait(30)
    node.tick()
    snap = fetcher.jobs[0].snapshot()
    assert snap["state"] == "complete" and snap["archives"] == 1 and snap["backend"] == "codex"
    last = max(pub.archives, key=lambda r: r["to"])
    con = waku_messages.connect(synth.path, create=False)
    expected = list(waku_messages.query_messages(con, topics, last["from"], last["to"]))
    con.close()
    assert history.count(synth.community_id) == len(expected) > 0
    ids = {r["id"] for r in history.messages(synth.community_id, limit=10_000)}
    assert ids == {"0x" + m.hash.hex() for m in expected}
    assert state.archive_ids(synth.community_id, imported=True) == {last["id"]}
    assert state.archive_info(synth.community_id).last_magnetlink_uri == pub.index_cid


def test_fetch_job_failure_state_and_retry_reuses_blobs(world, codex_nodes):
    synth, topics, pub, clock, paths, state, history, fetcher = world
    from core.torrent.selection import Selection
    job = fetcher.fetch(pub.index_cid, paths.archive_dir, Selection("all"), community_id=synth.community_id)
    assert job.wait(30) and job.snapshot()["state"] == "complete" and job.fetched == 4
    again = fetcher.fetch(pub.index_cid, paths.archive_dir, Selection("all"), community_id=synth.community_id)
    assert again.wait(30) and again.reused == 4 and again.fetched == 0
    bad = fetcher.fetch("zNotACid", paths.archive_dir, Selection("all"), community_id=synth.community_id)
    assert bad.wait(30) and bad.snapshot()["state"] == "failed" and bad.snapshot()["code"] == "codex-error"
    assert "not a Codex manifest CID" in bad.snapshot()["message"]
    with pytest.raises(ValueError):
        LinkFetcher(codex=fetcher).fetch("magnet:?xt=urn:btih:" + "0" * 40, paths.archive_dir)
