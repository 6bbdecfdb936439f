"""Interop with js-waku from npm (pinned in tests/interop/js/package-lock.json): relay both ways with
@waku/sdk 0.0.27 + @waku/relay 0.0.14; store v3 queries and lightpush v3 with @waku/sdk 0.0.36."""
import time

import pytest

from core.waku.message import WakuMessage
from tests.integration.waku.conftest import Collector
from tests.interop.waku.conftest import needs_js

pytestmark = [pytest.mark.interop, needs_js]
PS = "/waku/2/rs/16/32"
CT = "/archivist/1/interop/proto"


def test_js_relay_publishes_to_our_node(our_node, js_node):
    ours = our_node()
    got = Collector()
    ours.subscribe(PS, [CT], got)
    js = js_node("relay.mjs", peer=ours.ws_addr(), topic=CT, mode="send", count=5)
    js.next("ready")
    msgs = got.wait_for(5, timeout=30)
    assert sorted(r.message.payload for r in msgs) == [b"from js %d" % i for i in range(5)]
    for r in msgs:
        assert r.message.content_topic == CT and r.message.timestamp > 0
        assert r.hash == r.message.hash(PS)
    ours.flush_store()
    assert ours.config.store.count() == 5


def test_our_node_publishes_to_js_relay(our_node, js_node):
    ours = our_node()
    js = js_node("relay.mjs", peer=ours.ws_addr(), topic=CT, mode="recv", count=3)
    ready = js.next("ready")
    ours.wait_for_relay_peer(ready["peerId"], PS, timeout=30)
    sent = [WakuMessage(b"from python %d" % i, CT, timestamp=time.time_ns(), meta=b"m") for i in range(3)]
    for m in sent:
        ours.publish(PS, m)
    got = [js.next("received") for _ in range(3)]
    assert sorted(bytes.fromhex(e["payload"]) for e in got) == sorted(m.payload for m in sent)
    assert all(e["pubsubTopic"] == PS and e["contentTopic"] == CT for e in got)


@pytest.fixture
def filled_store_node(our_node):
    ours = our_node()
    t0 = (time.time_ns() // 10**6 - 3_600_000) * 10**6  # whole ms: js-waku sends times as Date (ms)
    # mid-millisecond timestamps: js-waku computes ms * 1e6 in float64 and is off by up to 128 ns near 1.8e18
    msgs = [WakuMessage(b"stored %03d" % i, CT, timestamp=t0 + i * 10**6 + 500_000) for i in range(53)]
    ours.config.store.add_many((PS, m) for m in msgs)
    ours.config.store.add_many((PS, WakuMessage(b"x%d" % i, "/other/1/x/proto", timestamp=t0 + i)) for i in range(9))
    return ours, msgs, t0


@pytest.mark.parametrize("forward,limit,pages", [("true", 7, 8), ("false", 5, 11)])
def test_js_store_v3_queries_our_store(filled_store_node, js_node, forward, limit, pages):
    ours, msgs, _ = filled_store_node
    js = js_node("light.mjs", peer=ours.ws_addr(), topic=CT, mode="store", forward=forward, limit=limit)
    js.next("ready")
    done = js.next("done", timeout=60)
    assert (done["count"], done["pages"]) == (53, pages)


def test_js_store_v3_hashes_and_time_window(filled_store_node, js_node):
    ours, msgs, t0 = filled_store_node
    start_ms, end_ms = (t0 + 10 * 10**6) // 10**6, (t0 + 20 * 10**6) // 10**6
    js = js_node("light.mjs", peer=ours.ws_addr(), topic=CT, mode="store", forward="true", limit=3,
                 start=start_ms, end=end_ms)
    js.next("ready")
    got = []
    while True:
        ev = js.events.get(timeout=60)
        if ev["event"] == "message":
            got.append(ev)
        elif ev["event"] in ("done", "exit"):
            break
    assert [bytes.fromhex(e["payload"]) for e in got] == [m.payload for m in msgs[10:20]]
    # js-waku computes the deterministic hash itself: it must equal ours
    assert [e["hash"] for e in got] == [m.hash(PS).hex() for m in msgs[10:20]]


def test_js_store_v3_message_hash_lookup(filled_store_node, js_node):
    ours, msgs, _ = filled_store_node
    wanted = [msgs[3], msgs[17], msgs[42]]
    hashes = ",".join([m.hash(PS).hex() for m in wanted] + ["ab" * 32])  # plus one we do not have
    js = js_node("light.mjs", peer=ours.ws_addr(), topic=CT, mode="store", forward="true", limit=2, hashes=hashes)
    js.next("ready")
    got = []
    while (ev := js.events.get(timeout=60))["event"] == "message":
        got.append(ev)
    assert ev["event"] == "done"
    assert [e["hash"] for e in got] == [m.hash(PS).hex() for m in wanted]


@pytest.mark.parametrize("legacy", ["false", "true"])  # lightpush v3, and the legacy v2-beta1 server
def test_js_lightpush_to_our_node(our_node, js_node, legacy):
    ours = our_node()
    got = Collector()
    ours.subscribe(PS, [CT], got)
    js = js_node("light.mjs", peer=ours.ws_addr(), topic=CT, mode="lightpush", count=3, legacy=legacy)
    js.next("ready")
    for _ in range(3):
        ev = js.next("pushed")
        assert ev["successes"] == 1 and ev["failures"] == []
    assert sorted(r.message.payload for r in got.wait_for(3)) == [b"pushed by js %d" % i for i in range(3)]
    ours.flush_store()
    assert ours.config.store.count() == 3
