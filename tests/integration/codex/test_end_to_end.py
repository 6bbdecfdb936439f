"""Owner and member on two loopback Codex test nodes: publish from generated data, fetch latest, then a range."""
import pytest

from core.codex.backend import CodexMember, CodexOwner, announcement, link_kind
from core.codex.errors import CodexVerifyError
from core.status.application_metadata import parse_archive_link_message
from core.storage import waku_messages
from core.synth import community_key, synthesize
from core.torrent.selection import Selection
from tests.support.codex_node import FakeClock

WEEK = 7 * 86400


@pytest.fixture
def store(tmp_path):
    res = synthesize(tmp_path / "store.db", messages=800, weeks=5, channels=3, seed=7)
    return res, [bytes.fromhex(t[2:]) for t in res.topics]


def source_messages(db, topics, lo, hi):
    con = waku_messages.connect(db, create=False)
    try:
        return list(waku_messages.query_messages(con, topics, lo, hi))
    finally:
        con.close()


def test_owner_publishes_member_fetches_latest_then_range(tmp_path, store, codex_nodes, clients):
    synth, topics = store
    owner_node, member_node = codex_nodes("owner"), codex_nodes("member")
    member_node.add_peer(owner_node)
    clock = FakeClock(synth.end + 60)
    owner = CodexOwner(clients(owner_node.url), tmp_path / "owner", synth.community_id, clock=clock)
    pub = owner.publish(synth.path, topics, end=synth.end + 1)
    assert pub.index_cid and pub.index_cid.startswith("zDvZRwz")
    assert len(pub.new_archive_ids) == 5 and pub.messages == 800
    # every archive and the index are on the owner's node, none on the member's yet
    oc = clients(owner_node.url)
    assert all(oc.exists(r["cid"]) for r in pub.archives) and oc.exists(pub.index_cid)

    # announce: type-43 message signed with the community key; the member checks the signer and the link kind
    wire = announcement(community_key(7), pub.index_cid, clock_ms=int(clock() * 1000))
    msg = parse_archive_link_message(wire, synth.community_id)
    assert msg.link == pub.index_cid and link_kind(msg.link) == "codex" and not msg.is_magnet

    member = CodexMember(clients(member_node.url, read_timeout=10))
    latest = member.sync(msg.link, selection=Selection("latest"))
    assert latest.ok and len(latest.chosen) == 1 and latest.index_archives == 5
    (aid,) = latest.chosen
    last = max(pub.archives, key=lambda r: r["to"])
    assert aid == last["id"]
    assert latest.messages() == source_messages(synth.path, topics, last["from"], last["to"])
    # only the latest archive travelled to the member's node
    mc = clients(member_node.url)
    fetched = {r["cid"] for r in pub.archives if mc.exists(r["cid"])}
    assert fetched == {last["cid"]}

    # then a time range covering weeks 2-3; the latest archive is already local and is not fetched again
    lo, hi = synth.start + WEEK + 3600, synth.start + 3 * WEEK - 3600
    ranged = member.sync(pub.index_cid, local_ids={aid}, selection=Selection("range", lo, hi))
    assert ranged.ok and len(ranged.chosen) == 2 and aid not in ranged.chosen
    wins = sorted((ranged.archives[a].start, ranged.archives[a].end) for a in ranged.chosen)
    assert wins[0][0] <= lo and wins[-1][1] >= hi
    assert ranged.messages() == source_messages(synth.path, topics, wins[0][0], wins[-1][1])


def test_second_publish_appends_and_keeps_old_ids(tmp_path, store, codex_nodes, clients):
    synth, topics = store
    node = codex_nodes("owner")
    owner = CodexOwner(clients(node.url), tmp_path / "owner", synth.community_id)
    first = owner.publish(synth.path, topics, end=synth.start + 2 * WEEK)
    second = owner.publish(synth.path, topics, end=synth.end + 1)
    assert len(first.new_archive_ids) == 2 and len(second.new_archive_ids) == 3
    assert first.index_cid != second.index_cid
    member = CodexMember(clients(node.url), network=False)
    entries = member.fetch_index(second.index_cid)
    assert set(entries) == set(first.new_archive_ids) | set(second.new_archive_ids)
    # a restarted owner reloads its state and publishes nothing new
    again = CodexOwner(clients(node.url), tmp_path / "owner", synth.community_id).publish(
        synth.path, topics, end=synth.end + 1)
    assert again.new_archive_ids == [] and again.index_cid == second.index_cid


def test_encrypted_community_hash_ratchet(tmp_path, store, codex_nodes, clients):
    """Archives and index wrapped with status-go's hash ratchet (core.status): unreadable without the key."""
    from core.status.archive_encryption import GroupKey, GroupKeyStore, HashRatchetEncryptor, open_archive_bytes
    from core.status.identity import community_id_bytes
    synth, topics = store
    node = codex_nodes("owner")
    gid = community_id_bytes(synth.community_id)
    owner_keys = GroupKeyStore()
    owner_keys.add(GroupKey(gid, bytes(range(32)), 1_700_000_000_000))
    owner = CodexOwner(clients(node.url), tmp_path / "owner", synth.community_id,
                       transform=HashRatchetEncryptor(owner_keys, gid))
    pub = owner.publish(synth.path, topics, end=synth.end + 1)
    raw_index = clients(node.url).download(pub.index_cid)
    assert synth.topics[0][2:].encode() not in raw_index
    nokey = CodexMember(clients(node.url), network=False, untransform=lambda b: open_archive_bytes(b, GroupKeyStore()))
    with pytest.raises(CodexVerifyError) as ei:
        nokey.fetch_index(pub.index_cid)
    assert getattr(ei.value, "code", "") == "codex-verify-failed" and "key" in str(ei.value).lower()
    member_keys = GroupKeyStore()
    member_keys.add(GroupKey(gid, bytes(range(32)), 1_700_000_000_000))
    member = CodexMember(clients(node.url), network=False,
                         untransform=lambda b: open_archive_bytes(b, member_keys))
    res = member.sync(pub.index_cid, selection=Selection("all"))
    assert res.ok and len(res.messages()) == 800
    assert res.messages() == source_messages(synth.path, topics, synth.start, synth.end + 1)
