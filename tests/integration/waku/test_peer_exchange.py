"""34/WAKU2-PEER-EXCHANGE between real nodes on 127.0.0.1, and discovery end to end: a local DNS tree leads to a
peer-exchange server, which leads to a peer that a message is then relayed to."""
import re
import time

import pytest
from libp2p.peer.id import ID

from core.waku import dns_discovery as dd
from core.waku import enr, peer_exchange as px
from core.waku.message import WakuMessage
from tests.integration.waku.conftest import Collector
from tests.unit.waku.test_dns_discovery import TREE_KEY, TREE_PUB, LocalDns

PS = "/waku/2/rs/16/32"
CT = "/app/1/px/proto"


def record_of(backend, *, shards=(16, [32]), seq=1) -> enr.Enr:
    """The node's own signed ENR: its identity key and its TCP listen port."""
    tcp = next(a for a in backend.listen_addrs if "/ws" not in a)
    port = int(re.search(r"/tcp/(\d+)", tcp).group(1))
    key = backend.node.key_pair.private_key.to_bytes()
    return enr.build(key, seq, ip="127.0.0.1", tcp=port, waku2=enr.capability_bits("relay"), shards=shards)


def serve_px(backend, records, **kw) -> px.EnrCache:
    cache = px.EnrCache()
    cache.add(records)
    backend._sync(lambda: px.serve_on(backend.node.host, cache, **kw))
    return cache


def ask(backend, server, n):
    return backend._call(px.request, backend.node.host, ID.from_base58(server.peer_id), n)


def dial(backend, records, **kw):
    return backend._call(lambda: px.connect_discovered(backend.node, records, **kw))


def fake_records(n, cluster=16, shard=32):
    return [enr.build(bytes([0x40 + i]) * 32, ip="127.0.0.1", tcp=1, shards=(cluster, [shard])) for i in range(n)]


def test_px_returns_known_records_and_the_client_dials_the_matching_one(make_node):
    a, b, c = make_node(store=False), make_node(store=False), make_node(store=False)
    c_rec = record_of(c)
    other_cluster = fake_records(2, cluster=1, shard=0)
    serve_px(a, [c_rec, *other_cluster])
    b.add_peer(a.listen_addrs[0])
    got = ask(b, a, 10)
    assert sorted(r.raw for r in got) == sorted(r.raw for r in [c_rec, *other_cluster])
    assert c.peer_id not in b.connected_peers()
    assert dial(b, got, cluster=16, shards=[32]) == [c.peer_id]   # other cluster filtered out, never dialled
    assert c.peer_id in b.connected_peers()
    # the discovered connection carries relay traffic
    b.wait_for_relay_peer(c.peer_id)
    inbox = Collector()
    c.subscribe(PS, [CT], inbox)
    c.wait_for_relay_peer(b.peer_id)
    msg = WakuMessage(b"found via px", CT, timestamp=time.time_ns())
    b.publish(PS, msg)
    assert inbox.wait_for(1)[0].hash == msg.hash(PS)


def test_px_caps_the_answer_and_reports_refusals(make_node):
    """Every WakuNode serves peer exchange from its own cache (node.px_cache): a node that knows no peer
    answers 503; the cap applies."""
    a, b, fresh = (make_node(store=False) for _ in range(3))
    serve_px(a, fake_records(5), max_peers=3)
    for peer in (a, fresh):
        b.add_peer(peer.listen_addrs[0])
    assert len(ask(b, a, 10)) == 3
    assert len(ask(b, a, 2)) == 2
    with pytest.raises(px.PeerExchangeError, match="peer exchange failed: 503 no peers known") as ei:
        ask(b, fresh, 5)
    assert ei.value.code == 503
    fresh.node.px_cache.add(fake_records(2))      # the node's own cache is what it serves
    assert len(ask(b, fresh, 5)) == 2


def test_cache_keeps_the_newest_record_per_node_and_stays_bounded():
    key = b"\x11" * 32
    old, new = enr.build(key, 1, tcp=1), enr.build(key, 2, tcp=2)
    cache = px.EnrCache(capacity=3)
    assert cache.add([new, old]) == 1 and cache.records() == [new]
    cache.add(fake_records(4))
    assert len(cache) == 3 and new not in cache.records()   # the oldest entry went first


def test_malformed_requests_get_400():
    cache = px.EnrCache()
    cache.add(fake_records(1))
    for data in (b"\xff\xff", px.pxpb.PeerExchangeRPC().SerializeToString(), px.encode_query(0)):
        resp = px.pxpb.PeerExchangeRPC.FromString(px.answer(cache, data)).response
        assert resp.status_code == 400 and not resp.peer_infos


def test_dns_tree_then_peer_exchange_then_relay(make_node):
    """B knows only a tree URL. The tree (local DNS, signed with a test key) lists A; A serves C by peer
    exchange; B ends up connected to C and relays to it."""
    a, b, c = make_node(store=False), make_node(store=False), make_node(store=False)
    serve_px(a, [record_of(c)])
    root, txt = dd.make_tree(TREE_KEY, [record_of(a).to_text(), fake_records(1, cluster=1)[0].to_text()])
    zone = {"boot.test": root, **{f"{h}.boot.test": t for h, t in txt.items()}}
    server = LocalDns(zone)
    try:
        resolver = dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0)
        found = dd.discover(dd.make_url(TREE_PUB, "boot.test"), resolver, cluster=16, shards=[32])
    finally:
        server.close()
    assert [r.peer_id for r in found] == [a.peer_id]
    assert dial(b, found, cluster=16) == [a.peer_id]
    assert dial(b, ask(b, a, 5), cluster=16, shards=[32]) == [c.peer_id]
    b.wait_for_relay_peer(c.peer_id)
    inbox = Collector()
    c.subscribe(PS, [CT], inbox)
    msg = WakuMessage(b"dns then px", CT, timestamp=time.time_ns())
    c.wait_for_relay_peer(b.peer_id)
    b.publish(PS, msg)
    assert inbox.wait_for(1)[0].hash == msg.hash(PS)
