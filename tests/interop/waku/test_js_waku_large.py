"""Large messages (issue 21): the Status fleet's 1 MiB limit (NodeConfig.max_message_size) governs, not a
transport limit below it. js-waku (tests/interop/js/large.mjs) sends 900 KiB and 1 MiB messages over relay that
our node stores and serves back byte-identical over store v3, and receives the same from us; it refuses 1.2 MiB
itself (its own 1 MiB cap), so our side's refusal of 1.2 MiB is shown with a second node of ours that allows
2 MiB: the relay validator refuses it with a log line naming size and limit (the peer stays), lightpush answers
413 with the same figures. Payloads are random; only their SHA-256 is compared and logged."""
import hashlib
import logging
import os
import threading
import time

import pytest

from core.waku.message import WakuMessage, encode_message
from tests.integration.waku.conftest import Collector
from tests.interop.waku.conftest import needs_js

pytestmark = [pytest.mark.interop]
PS = "/waku/2/rs/16/32"
CT = "/archivist/1/large/proto"
KIB, MIB = 1024, 1024 * 1024
BIG = 900 * KIB                 # carried everywhere
HUGE = int(1.2 * MIB)           # refused everywhere
JS_REFUSAL = "Size is too big"  # @waku/interfaces ProtocolError.SIZE_TOO_BIG / LightPushError.SIZE_TOO_BIG


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def message(size: int) -> WakuMessage:
    return WakuMessage(os.urandom(size), CT, timestamp=time.time_ns())


def message_of_encoded_size(total: int) -> WakuMessage:
    """A message whose encoding is exactly `total` bytes (the envelope is constant from 16 KiB to 2 MiB)."""
    probe = message(100_000)
    return message(total - (len(encode_message(probe)) - 100_000))


class LogWatch(logging.Handler):
    """Records of one logger, with a wait on a condition (no sleep) for a record containing a text."""

    def __init__(self, name: str):
        super().__init__(logging.INFO)
        self.records: list[str] = []
        self._cond = threading.Condition()
        self.logger = logging.getLogger(name)

    def __enter__(self):
        self._old = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)
        self.logger.setLevel(self._old)

    def emit(self, record):
        with self._cond:
            self.records.append(record.getMessage())
            self._cond.notify_all()

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        with self._cond:
            if not self._cond.wait_for(lambda: any(text in r for r in self.records), timeout):
                raise AssertionError(f"no log line with {text!r}; got {self.records}")
            return next(r for r in self.records if text in r)


@needs_js
def test_js_relays_900kib_and_1mib_that_our_store_serves_back_identical(our_node, js_node):
    ours = our_node()
    got = Collector()
    ours.subscribe(PS, [CT], got)
    js = js_node("large.mjs", peer=ours.ws_addr(), topic=CT, mode="relay-send", sizes=f"{BIG},max")
    js.next("ready")
    sent = [js.next("sent", timeout=60) for _ in range(2)]
    assert [e["failures"] for e in sent] == [[], []] and sent[0]["size"] == BIG
    assert sent[1]["wireSize"] == MIB            # js-waku's cap, and the fleet's limit: accepted by both sides
    received = got.wait_for(2, timeout=60)
    assert sorted(sha(r.message.payload) for r in received) == sorted(e["sha256"] for e in sent)
    assert sorted(len(encode_message(r.message)) for r in received)[-1] == MIB
    ours.flush_store()
    assert ours.config.store.count() == 2
    js.stop()

    store = js_node("large.mjs", peer=ours.ws_addr(), topic=CT, mode="store")
    store.next("ready")
    back = [store.next("message", timeout=60) for _ in range(2)]
    assert store.next("done", timeout=60)["count"] == 2
    assert sorted((e["sha256"], e["size"]) for e in back) == sorted((e["sha256"], e["size"]) for e in sent)
    assert sorted(e["hash"] for e in back) == sorted(r.hash.hex() for r in received)  # js-computed = ours


@needs_js
def test_our_node_relays_900kib_and_1mib_to_js(our_node, js_node):
    ours = our_node()
    js = js_node("large.mjs", peer=ours.ws_addr(), topic=CT, mode="relay-recv", count=2)
    ours.wait_for_relay_peer(js.next("ready")["peerId"], PS, timeout=30)
    sent = [message(BIG), message_of_encoded_size(ours.config.max_message_size)]
    for m in sent:
        ours.publish(PS, m)
    got = [js.next("received", timeout=60) for _ in range(2)]
    assert [(e["sha256"], e["size"]) for e in got] == [(sha(m.payload), len(m.payload)) for m in sent]
    assert all(e["pubsubTopic"] == PS and e["contentTopic"] == CT for e in got)


@needs_js
@pytest.mark.parametrize("mode", ["relay-send", "lightpush"])
def test_js_waku_refuses_1_2mib_itself(our_node, js_node, mode):
    """js-waku will not send more than 1 MiB encoded, over relay or lightpush; the small message after it
    arrives, so the refusal is js-waku's and the link still works."""
    ours = our_node()
    got = Collector()
    ours.subscribe(PS, [CT], got)
    js = js_node("large.mjs", peer=ours.ws_addr(), topic=CT, mode=mode, sizes=f"{HUGE},1024")
    js.next("ready")
    kind = "sent" if mode == "relay-send" else "pushed"
    huge, small = js.next(kind, timeout=60), js.next(kind, timeout=60)
    assert (huge["size"], huge["failures"]) == (HUGE, [JS_REFUSAL])
    assert small["failures"] == []
    (only,) = got.wait_for(1, timeout=30)
    assert sha(only.message.payload) == small["sha256"]
    ours.flush_store()
    assert ours.config.store.count() == 1


@pytest.fixture
def sender_and_receiver(our_node):
    """`receiver`: our default node (1 MiB); `sender`: a node of ours that allows 2 MiB, dialled to it."""
    receiver = our_node()
    sender = our_node(store=False, max_message_size=2 * MIB)
    sender.add_peer(receiver.listen_addrs[0])
    sender.wait_for_relay_peer(receiver.peer_id, PS, timeout=30)
    return sender, receiver


def test_our_relay_refuses_1_2mib_with_a_log_line_and_keeps_the_peer(sender_and_receiver):
    sender, receiver = sender_and_receiver
    got = Collector()
    receiver.subscribe(PS, [CT], got)
    huge, big = message(HUGE), message(BIG)
    size = len(encode_message(huge))
    with LogWatch("core.waku.relay") as logs:
        sender.publish(PS, huge)   # the sender's own limit is 2 MiB: it goes out
        line = logs.wait_for("refused a message")
    assert line == f"relay: refused a message from {sender.peer_id}: message is {size} bytes (max {MIB})"
    assert receiver.node.validator.rejected["oversize"] == 1
    sender.publish(PS, big)        # the same peer, the same relay stream: still carried
    assert [sha(r.message.payload) for r in got.wait_for(1, timeout=30)] == [sha(big.payload)]
    assert sender.peer_id in receiver.connected_peers()
    receiver.flush_store()
    assert receiver.config.store.count() == 1


def test_our_lightpush_answers_413_naming_size_and_limit(sender_and_receiver):
    sender, receiver = sender_and_receiver
    request_limit = MIB + 64 * KIB                           # lightpush.REQUEST_OVERHEAD
    with LogWatch("core.waku.edge_streams") as edge, LogWatch("core.waku.node") as node_log:
        resp = sender.lightpush(receiver.peer_id, PS, message(HUGE))      # refused by its length prefix alone
        assert resp.status_code == 413
        assert resp.status_desc.startswith("request is ") and resp.status_desc.endswith(f" bytes (max {request_limit})")
        assert int(resp.status_desc.split()[2]) > HUGE
        assert edge.wait_for("lightpush v3: refused a request").endswith(resp.status_desc)

        over = message_of_encoded_size(MIB + 1)                           # within the request, over the message
        resp = sender.lightpush(receiver.peer_id, PS, over)
        assert (resp.status_code, resp.status_desc) == (413, f"message is {MIB + 1} bytes (max {MIB})")
        assert node_log.wait_for("lightpush: refused") == f"lightpush: refused a message: {resp.status_desc}"

    big = message(BIG)
    resp = sender.lightpush(receiver.peer_id, PS, big)
    assert (resp.status_code, resp.status_desc) == (200, "OK")
    receiver.flush_store()
    (stored,) = receiver.query_store(None, [CT], pubsub_topic=PS)
    assert sha(stored.message.payload) == sha(big.payload)


@pytest.fixture
def large_store_node(our_node):
    """Our node with 9 messages of 900 KiB stored (8 MiB: more than one answer can carry)."""
    ours = our_node()
    t0 = time.time_ns() - 60 * 10**9
    msgs = [WakuMessage(os.urandom(BIG), CT, timestamp=t0 + i * 10**6 + 500_000) for i in range(9)]
    ours.config.store.add_many((PS, m) for m in msgs)
    return ours, msgs


@needs_js
def test_js_pages_through_many_large_messages(large_store_node, js_node):
    """js-waku reads a store answer of at most 4 MiB (it-length-prefixed's default); a default page of 20 such
    messages would be 18 MiB and fail with ERR_MSG_DATA_TOO_LONG: our pages stop at 4 messages."""
    ours, msgs = large_store_node
    js = js_node("large.mjs", peer=ours.ws_addr(), topic=CT, mode="store")
    js.next("ready")
    got = [js.next("message", timeout=60) for _ in range(9)]
    assert js.next("done", timeout=60) == {"event": "done", "count": 9, "pages": 3}
    assert [e["sha256"] for e in got] == [sha(m.payload) for m in msgs]


@pytest.mark.parametrize("version,forward", [(3, True), (3, False), (2, True), (2, False)])
def test_store_pages_stop_before_4_mib_in_both_versions(large_store_node, our_node, version, forward):
    ours, msgs = large_store_node
    client = our_node(store=False)
    got = list(client.query_store(ours.listen_addrs[0], [CT], pubsub_topic=PS, version=version, forward=forward))
    want = [sha(m.payload) for m in msgs]
    if forward:
        assert [sha(r.message.payload) for r in got] == want
    else:   # pages newest first, each page oldest first (store v3 and our v2 client alike)
        assert sorted(sha(r.message.payload) for r in got) == sorted(want) and len(got) == len(msgs)


def test_a_page_of_large_messages_holds_4_and_a_cursor_v3_and_v2(large_store_node):
    from core.pb import waku_store_v2beta4_pb2 as v2pb
    from core.pb import waku_store_v3_pb2 as v3pb
    from core.waku.message import v2_digest
    from core.waku.store_query import MAX_RESPONSE_BYTES, handle_store_v2, handle_store_v3
    ours, msgs = large_store_node
    req = v3pb.StoreQueryRequest(request_id="r", include_data=True, content_topics=[CT], pagination_forward=True)
    resp = handle_store_v3(ours.config.store, req)
    assert len(resp.messages) == 4 and resp.pagination_cursor == msgs[3].hash(PS)
    assert resp.ByteSize() <= MAX_RESPONSE_BYTES
    req.include_data = False                                   # hashes only: the page size is the only limit
    assert len(handle_store_v3(ours.config.store, req).messages) == 9
    rpc = v2pb.HistoryRPC(request_id="r", query=v2pb.HistoryQuery(
        content_filters=[v2pb.ContentFilter(content_topic=CT)],
        paging_info=v2pb.PagingInfo(direction=v2pb.PagingInfo.FORWARD)))
    resp2 = handle_store_v2(ours.config.store, rpc).response
    assert len(resp2.messages) == resp2.paging_info.page_size == 4
    assert resp2.paging_info.cursor.digest == v2_digest(msgs[3])
