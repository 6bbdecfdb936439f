"""A node that joins late catches up from a store node by paging (v3 and v2-beta4 over the wire)."""
import os
import time

import pytest

from core.waku.embedded import WakuPeerError
from core.waku.message import WakuMessage

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"
N = 10_000
RELAYED = 10_000 if os.environ.get("ARCHIVIST_SLOW") == "1" else 2_000   # relayed one by one: ~4 ms each


@pytest.fixture
def store_node(make_node):
    s = make_node()
    t0 = time.time_ns() - N * 1000
    s.config.store.add_many((PS, WakuMessage(b"msg %05d" % i, CT, timestamp=t0 + i * 1000)) for i in range(N))
    s.config.store.add_many((PS, WakuMessage(b"noise %d" % i, "/app/1/x/proto", timestamp=t0 + i)) for i in range(50))
    return s, t0


def test_late_joiner_pages_through_10000_messages_v3(make_node, store_node):
    s, _ = store_node
    late = make_node(store=False)
    got = list(late.query_store(s.listen_addrs[0], [CT], pubsub_topic=PS, page_size=100))
    assert len(got) == N
    assert [r.message.payload for r in got] == [b"msg %05d" % i for i in range(N)]
    assert all(r.hash == r.message.hash(PS) for r in got[:50])
    back = list(late.query_store(s.peer_id, [CT], pubsub_topic=PS, page_size=1000, forward=False))
    assert [r.message.payload for r in back][:3] == [b"msg %05d" % i for i in range(N - 100, N - 97)]
    assert len(back) == N  # page size capped at 100 by the server, paging still ends


def test_v3_time_window_and_invalid_cursor_over_the_wire(make_node, store_node):
    s, t0 = store_node
    late = make_node(store=False)
    late.add_peer(s.listen_addrs[0])
    got = list(late.query_store(s.peer_id, [CT], t0 + 1000 * 10, t0 + 1000 * 19, page_size=3))
    assert [r.message.payload for r in got] == [b"msg %05d" % i for i in range(10, 20)]
    from core.pb import waku_store_v3_pb2 as v3pb
    resp = late._call(late.node.store_query_v3, s.peer_id,
                      v3pb.StoreQueryRequest(request_id="bad", pagination_cursor=b"\x01" * 32))
    assert (resp.status_code, resp.request_id) == (400, "bad") and resp.status_desc


def test_v2beta4_paging_over_the_wire(make_node, store_node):
    s, t0 = store_node
    late = make_node(store=False)
    late.add_peer(s.listen_addrs[0])
    got = list(late.query_store(s.peer_id, [CT], t0, t0 + 1000 * 249, pubsub_topic=PS, page_size=40, version=2))
    assert [r.message.payload for r in got] == [b"msg %05d" % i for i in range(250)]
    back = list(late.query_store(s.peer_id, [CT], t0, t0 + 1000 * 249, page_size=40, forward=False, version=2))
    assert sorted(r.message.payload for r in back) == [b"msg %05d" % i for i in range(250)]


def test_store_query_to_node_without_store_fails_cleanly(make_node):
    a, b = make_node(store=False), make_node(store=False)
    with pytest.raises(WakuPeerError, match="unsupported: the peer does not serve the protocol") as e:
        list(a.query_store(b.listen_addrs[0], [CT]))
    assert (e.value.peer, e.value.op) == (b.peer_id, "store query")


def test_late_joiner_catches_up_relayed_messages(make_node):
    """The full path: messages relayed to the store node while the late node is offline, then paged back from its
    store (RELAYED: 2,000 by default, 10,000 with ARCHIVIST_SLOW=1)."""
    N = RELAYED
    from tests.integration.waku.conftest import Collector
    pub, s = make_node(store=False), make_node()
    s.add_peer(pub.listen_addrs[0])
    s.wait_for_relay_peer(pub.peer_id)
    pub.wait_for_relay_peer(s.peer_id)
    seen = Collector()
    s.subscribe(PS, [CT], seen)
    t0 = time.time_ns()
    for i in range(N):
        pub.publish(PS, WakuMessage(b"relayed %05d" % i, CT, timestamp=t0 + i))
    seen.wait_for(N, timeout=300)
    late = make_node(store=False)
    got = list(late.query_store(s.listen_addrs[1], [CT], pubsub_topic=PS, page_size=100))
    assert [r.message.payload for r in got] == [b"relayed %05d" % i for i in range(N)]
