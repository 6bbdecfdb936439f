"""Three embedded nodes in a line (A - B - C) relay end to end over real Noise connections."""
import time

from core.waku.message import WakuMessage
from tests.integration.waku.conftest import Collector

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


def test_three_nodes_in_a_line_relay_end_to_end(make_node):
    a, b, c = make_node(), make_node(), make_node()
    b.add_peer(a.listen_addrs[0])          # TCP
    c.add_peer(b.ws_addr())                # WebSocket
    for node, peer in ((b, a), (a, b), (c, b), (b, c)):   # each side has the other's subscription: a publish of
        node.wait_for_relay_peer(peer.peer_id)            # A's goes to B only once A knows B relays the topic
    at_c, other_at_c, at_a = Collector(), Collector(), Collector()
    c.subscribe(PS, [CT], at_c)
    c.subscribe(PS, ["/app/1/other/proto"], other_at_c)
    a.subscribe(PS, [], at_a)
    assert a.peer_id not in c.connected_peers()
    msgs = [WakuMessage(f"hello {i}".encode(), CT, timestamp=time.time_ns()) for i in range(20)]
    hashes = [a.publish(PS, m) for m in msgs]
    got = at_c.wait_for(20)
    assert sorted(r.hash for r in got) == sorted(hashes)
    assert {r.message.payload for r in got} == {m.payload for m in msgs}
    assert other_at_c.items == []  # content-topic subscription filters
    # and back the other way: C -> B -> A
    back = c.publish(PS, WakuMessage(b"back", "/app/1/other/proto", timestamp=time.time_ns()))
    assert any(r.hash == back for r in at_a.wait_for(21))
    b.flush_store()
    assert b.config.store.count() == 21  # the middle node stored what it relayed


def test_invalid_messages_are_not_published(make_node):
    import pytest
    from core.waku.message import InvalidMessage
    a = make_node(store=False)
    for bad in [WakuMessage(b"", "/a/1/b/c", timestamp=1), WakuMessage(b"x", "/a/1/b/c"),
                WakuMessage(b"x" * (1024 * 1024 + 1), "/a/1/b/c", timestamp=1),  # over the 1 MiB default
                WakuMessage(b"x", "/a/1/b/c", timestamp=time.time_ns() + 3600 * 10**9),  # beyond the 20 s skew
                WakuMessage(b"x", "no-slashes", timestamp=1)]:
        with pytest.raises(InvalidMessage):
            a.publish(PS, bad)


def test_burst_is_delivered_without_drops(make_node):
    """1,500 messages published back to back: py-libp2p's 32-slot queues and 10 msg/s spam limit would drop
    most of them; with the fixes and publisher back-pressure every one arrives and is stored."""
    a, b = make_node(store=False), make_node()
    b.add_peer(a.listen_addrs[0])
    b.wait_for_relay_peer(a.peer_id)
    a.wait_for_relay_peer(b.peer_id)
    got = Collector()
    b.subscribe(PS, [CT], got)
    t0 = time.time_ns()
    for i in range(1500):
        a.publish(PS, WakuMessage(b"burst %d" % i, CT, timestamp=t0 + i))
    assert len({r.hash for r in got.wait_for(1500, timeout=60)}) == 1500
    assert sum(1 for _ in b.query_store(None, [CT])) == 1500
