"""The node's persistent peer store and its discovery-fed peer-exchange cache, with real nodes on 127.0.0.1:
a restart reconnects from the store, a dead peer is retried on its back-off schedule (injected clock), a bad store
file is set aside, inbound peers are remembered from identify, and discovered records are served by peer exchange.
"""
import socket
import time

import pytest
from libp2p.crypto.secp256k1 import create_new_key_pair
from libp2p.peer.id import ID

from core.waku import dns_discovery as dd
from core.waku.errors import WakuPeerError
from tests.integration.waku.discovery_support import Clock, S
from tests.integration.waku.test_peer_exchange import fake_records, record_of
from tests.unit.waku.test_dns_discovery import TREE_KEY, TREE_PUB, LocalDns


def wait_first_round(b):
    b._call(b.node.peers.wait_rounds, 1)


def stored(b, peer_id):
    return next((p for p in b.stored_peers() if p.peer_id == peer_id), None)


def dead_addr() -> tuple[str, str]:
    """A multiaddr on 127.0.0.1 where nothing listens (bound, then closed), with a fresh peer id."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    pid = ID.from_pubkey(create_new_key_pair().public_key).pretty()
    return f"/ip4/127.0.0.1/tcp/{port}/p2p/{pid}", pid


def test_restart_reconnects_from_the_store_and_dead_peers_follow_their_backoff(make_node, tmp_path):
    b = make_node(store=False)
    clock = Clock()
    kw = dict(store=False, key_path=tmp_path / "a.key", peer_store_path=tmp_path / "peers.sqlite", clock=clock,
              peer_check_interval_s=3600)
    a = make_node(**kw)
    wait_first_round(a)
    a.add_peer(b.listen_addrs[0])
    dead, dead_pid = dead_addr()
    with pytest.raises(WakuPeerError, match="unreachable"):
        a.add_peer(dead)
    first = stored(a, dead_pid)
    assert (first.failures, first.next_attempt) == (1, clock() / S + 120)
    a.stop()

    a2 = make_node(**kw)                          # same data folder: the store tells it whom to dial
    wait_first_round(a2)
    assert a2.peer_id == a.peer_id
    assert b.peer_id in a2.connected_peers()      # known-good peer reconnected at start
    assert stored(a2, b.peer_id).last_connected == clock() / S
    assert stored(a2, dead_pid).last_attempt == first.last_attempt   # in back-off: not dialled

    clock.ns += 119 * S
    assert a2.maintain_peers() == [] and stored(a2, dead_pid).failures == 1
    clock.ns += 1 * S                              # 120 s after the failure: one more try, then 480 s
    assert a2.maintain_peers() == []
    p = stored(a2, dead_pid)
    assert (p.failures, p.last_attempt, p.next_attempt) == (2, clock() / S, clock() / S + 480)
    clock.ns += 479 * S
    a2.maintain_peers()
    assert stored(a2, dead_pid).failures == 2
    clock.ns += 1 * S
    a2.maintain_peers()
    assert stored(a2, dead_pid).failures == 3
    assert b.peer_id in a2.connected_peers() and stored(a2, b.peer_id).failures == 0


def test_a_corrupted_store_file_is_set_aside_and_the_node_runs(make_node, tmp_path):
    path = tmp_path / "peers.sqlite"
    path.write_bytes(b"\x13garbage, not a database" * 200)
    b = make_node(store=False)
    a = make_node(store=False, peer_store_path=path)
    aside = a.node.peers.store.set_aside
    assert aside is not None and aside.name.startswith("peers.sqlite.bad-")
    assert aside.read_bytes() == b"\x13garbage, not a database" * 200
    a.add_peer(b.listen_addrs[0])
    assert [p.peer_id for p in a.stored_peers()] == [b.peer_id]


def test_inbound_peers_are_remembered_with_their_identify_addresses(make_node):
    a, b = make_node(store=False), make_node(store=False)
    b.add_peer(a.listen_addrs[0])
    deadline = time.monotonic() + 10
    while stored(a, b.peer_id) is None:          # identify runs in the background after the connection
        assert time.monotonic() < deadline, "a never stored b"
        a.maintain_peers()
    p = stored(a, b.peer_id)
    want = {addr.split("/p2p/")[0] for addr in b.listen_addrs}
    assert p.source == "inbound" and set(p.addrs) == want and p.last_connected is not None


def test_px_cache_is_filled_from_dns_discovery_and_from_reached_peers(make_node):
    """A walks a local tree (B, C and an unreachable record of our cluster, one of another cluster) and serves
    what it found. B learns C and the unreachable one from A by peer exchange; it serves only C, which it
    reached."""
    a, b, c = (make_node(store=False) for _ in range(3))
    rec_b, rec_c = record_of(b), record_of(c)
    unreachable, = fake_records(1)
    other_cluster, = fake_records(1, cluster=1, shard=0)
    root, txt = dd.make_tree(TREE_KEY, [r.to_text() for r in (rec_b, rec_c, unreachable, other_cluster)])
    zone = {"boot.test": root, **{f"{h}.boot.test": t for h, t in txt.items()}}
    server = LocalDns(zone)
    try:
        resolver = dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0)
        found = a.discover_dns(dd.make_url(TREE_PUB, "boot.test"), resolver, dial=False)
    finally:
        server.close()
    assert {r.raw for r in found} == {rec_b.raw, rec_c.raw, unreachable.raw}
    assert {r.raw for r in a.node.px_cache.records()} == {rec_b.raw, rec_c.raw, unreachable.raw}
    assert {p.source for p in a.stored_peers()} == {"dns"}

    b.add_peer(a.listen_addrs[0])
    got = b.exchange_peers(a.peer_id, 10)          # dials what it learnt: C answers, the fake one cannot
    assert {r.raw for r in got} == {rec_b.raw, rec_c.raw, unreachable.raw}
    assert c.peer_id in b.connected_peers()
    assert [r.raw for r in b.node.px_cache.records()] == [rec_c.raw]
    assert stored(b, unreachable.peer_id).failures == 1 and stored(b, b.peer_id) is None

    c.add_peer(b.listen_addrs[0])
    assert [r.raw for r in c.exchange_peers(b.peer_id, 5, dial=False)] == [rec_c.raw]


def test_a_node_with_an_enrtree_finds_and_dials_its_peers_at_start(make_node):
    """The path `--network status` takes (NodeConfig.enrtree_url), on a local tree and DNS server."""
    b = make_node(store=False)
    root, txt = dd.make_tree(TREE_KEY, [record_of(b).to_text()])
    server = LocalDns({"boot.test": root, **{f"{h}.boot.test": t for h, t in txt.items()}})
    try:
        a = make_node(store=False, enrtree_url=dd.make_url(TREE_PUB, "boot.test"),
                      dns_resolver=dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0))
        wait_first_round(a)
    finally:
        server.close()
    assert a.node.peers.dns_error is None
    assert b.peer_id in a.connected_peers() and stored(a, b.peer_id).source == "dns"
    assert [r.raw for r in a.node.px_cache.records()] == [record_of(b).raw]


def test_an_unreadable_enrtree_is_reported_and_the_node_runs(make_node):
    server = LocalDns({})
    try:
        a = make_node(store=False, enrtree_url=dd.make_url(TREE_PUB, "boot.test"),
                      dns_resolver=dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0))
        wait_first_round(a)
    finally:
        server.close()
    assert a.node.peers.dns_error.startswith("no root record at boot.test")
    assert a.connected_peers() == []
