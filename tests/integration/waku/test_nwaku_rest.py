"""NwakuRestBackend against a local server implementing nwaku's documented REST endpoints."""
import time

import pytest
from hypothesis import given, settings, strategies as st

from core.waku.errors import WakuPeerError
from core.waku.message import WakuMessage
from core.waku.nwaku_rest import NwakuRestBackend, RestError, message_from_json, message_to_json
from tests.integration.waku.conftest import Collector
from tests.integration.waku.nwaku_stub import NwakuStub

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


@pytest.fixture
def stub_backend():
    with NwakuStub() as stub:
        b = NwakuRestBackend(stub.url, poll_interval=None, clock=lambda: 0)
        b.start()
        yield stub, b
        b.stop()


def test_publish_subscribe_and_poll(stub_backend):
    stub, b = stub_backend
    got = Collector()
    b.subscribe(PS, [CT], got)
    assert PS in stub.subscriptions
    m = WakuMessage(b"via rest", CT, timestamp=time.time_ns(), meta=b"\x01")
    assert b.publish(PS, m) == m.hash(PS)
    stub.inject(PS, WakuMessage(b"other topic", "/app/1/x/proto", timestamp=time.time_ns()))
    assert b.poll_once() == 2
    assert [r.hash for r in got.items] == [m.hash(PS)]  # content-topic filter applied
    assert b.poll_once() == 0 and b.gap_fills == 0
    assert b.listen_addrs == ["/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2stub"]
    peer = "/ip4/127.0.0.1/tcp/1/p2p/16Uiu2X"
    assert b.add_peer(peer) == "16Uiu2X" and stub.peers == [peer]
    for bad in ("/ip4/127.0.0.1/tcp/1", "/ip4/127.0.0.1/tcp/1/p2p/", "/p2p/16Uiu2X/tcp/1"):
        with pytest.raises(WakuPeerError, match="bad address: the address does not end in /p2p/<peer id>"):
            b.add_peer(bad)                              # as the embedded node refuses it; nwaku is not asked
    assert len(stub.peers) == 1
    assert b.lightpush(PS, m)["statusCode"] == 200


def test_gap_in_relay_cache_is_filled_from_store(stub_backend):
    stub, b = stub_backend
    got = Collector()
    b.subscribe(PS, [], got)
    t0 = time.time_ns()
    sent = [WakuMessage(b"m%03d" % i, CT, timestamp=t0 + i) for i in range(130)]
    for m in sent:
        stub.inject(PS, m)  # 130 arrive between two polls: nwaku's cache keeps only the last 50
    assert b.poll_once() == 130
    assert b.gap_fills == 1
    assert [r.message.payload for r in got.items] == [m.payload for m in sent]
    stub.inject(PS, sent[5])  # a duplicate is not delivered twice
    assert b.poll_once() == 0


def test_store_query_pages_through_rest(stub_backend):
    stub, b = stub_backend
    for i in range(45):
        stub.store.add(PS, WakuMessage(b"s%d" % i, CT, timestamp=1000 + i))
    got = list(b.query_store(None, [CT], 1005, 1040, pubsub_topic=PS, page_size=7))
    assert [r.message.timestamp for r in got] == list(range(1005, 1041))
    assert all(r.hash == r.message.hash(PS) for r in got)


def test_errors_are_reported():
    with pytest.raises(RestError):
        NwakuRestBackend("http://127.0.0.1:9", poll_interval=None, timeout=2).start()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["payload", "contentTopic", "timestamp", "version", "meta", "ephemeral"]),
                       st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.none())))
def test_fuzz_json_message_decoder(d):
    try:
        m = message_from_json(d)
    except ValueError:
        return
    assert message_from_json(message_to_json(m)).payload == m.payload
