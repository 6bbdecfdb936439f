"""Every decoder fed from the network survives arbitrary bytes (bounded hypothesis runs), and abusive store
queries get the answers the spec asks for."""
import trio
from hypothesis import given, settings, strategies as st

from core.pb import waku_lightpush_pb2 as lpb
from core.pb import waku_store_v2beta4_pb2 as v2pb
from core.pb import waku_store_v3_pb2 as v3pb
from core.waku import lightpush, metadata
from core.waku.message import WakuMessage, encode_message
from core.waku.relay import RelayValidator
from core.waku.store_db import MessageStore
from core.waku.store_protocol import answer_v2, answer_v3

STORE = MessageStore()
STORE.add_many(("/waku/2/rs/16/32", WakuMessage(b"p%d" % i, "/a/1/b/c", timestamp=i + 1)) for i in range(25))
FUZZ = settings(max_examples=200, deadline=None)


@FUZZ
@given(st.binary(max_size=300))
def test_store_v3_answer_to_any_bytes(data):
    resp = v3pb.StoreQueryResponse.FromString(answer_v3(STORE, data))
    assert resp.status_code in (200, 400) and resp.status_desc


@FUZZ
@given(st.binary(max_size=300))
def test_store_v2_answer_to_any_bytes(data):
    out = answer_v2(STORE, data)
    assert out is None or len(v2pb.HistoryRPC.FromString(out).response.messages) <= 100


@FUZZ
@given(st.binary(max_size=200))
def test_metadata_decoder(data):
    try:
        cluster, shards = metadata.decode_metadata(data)
    except Exception as e:
        assert type(e).__name__ == "DecodeError"
        return
    assert cluster is None or 0 <= cluster < 2**32


async def _publish(topic, msg):
    from core.waku.message import validate_message
    validate_message(msg)
    return 1


@FUZZ
@given(st.binary(max_size=300))
def test_lightpush_v3_and_v2_answers_to_any_bytes(data):
    resp = trio.run(lightpush.answer_v3, data, _publish)
    assert resp.status_code in (200, 400, 413, 420, 421, 500)
    out = trio.run(lightpush.answer_v2, data, _publish)
    assert out is None or isinstance(out.response.is_success, bool)


@FUZZ
@given(st.binary(max_size=400))
def test_relay_validator_on_any_bytes(data):
    v = RelayValidator(max_message_size=300)
    m = v.check(data)
    assert m is None or (m.payload and m.content_topic and m.timestamp)


def test_relay_validator_counts_reasons():
    v = RelayValidator(max_message_size=1000)
    assert v.check(encode_message(WakuMessage(b"ok", "/a/1/b/c", timestamp=5))) is not None
    v.check(b"\xff\xff")
    v.check(encode_message(WakuMessage(b"", "/a/1/b/c", timestamp=5)))
    v.check(b"x" * 2000)
    assert v.rejected == {"malformed": 1, "empty payload": 1, "oversize": 1}


def test_abusive_store_queries():
    huge = v3pb.StoreQueryRequest(pagination_limit=2**64 - 1, time_start=-2**63, time_end=2**63 - 1)
    r = v3pb.StoreQueryResponse.FromString(answer_v3(STORE, huge.SerializeToString()))
    assert r.status_code == 200 and len(r.messages) == 25
    many = v3pb.StoreQueryRequest(content_topics=["/t/1/%d/p" % i for i in range(101)])
    assert v3pb.StoreQueryResponse.FromString(answer_v3(STORE, many.SerializeToString())).status_code == 400
    rpc = v2pb.HistoryRPC()
    rpc.query.paging_info.page_size = 2**64 - 1
    rpc.query.paging_info.cursor.digest = b"\x00" * 32
    out = v2pb.HistoryRPC.FromString(answer_v2(STORE, rpc.SerializeToString()))
    assert out.response.error == v2pb.HistoryResponse.INVALID_CURSOR
    lp = lpb.LightpushRequest(request_id="q")
    assert trio.run(lightpush.answer_v3, lp.SerializeToString(), _publish).status_code == 400


def test_lightpush_message_with_many_unknown_fields_is_taken_without_them():
    """protobuf has parsed the request, unknown fields included: they are dropped before the message is read again
    (core.waku.message.decode_message refuses more than MAX_FIELDS fields), as they are from store pages."""
    msg = WakuMessage(b"p", "/a/1/b/c", timestamp=7)
    req = lpb.LightpushRequest(request_id="r1", pubsub_topic="/waku/2/rs/16/32")
    req.message.MergeFromString(encode_message(msg) + b"\x20\x00" * 1000)
    published = []

    async def publish(topic, m):
        published.append((topic, m))
        return 1
    resp = trio.run(lightpush.answer_v3, req.SerializeToString(), publish)
    assert (resp.status_code, resp.request_id) == (200, "r1") and published == [("/waku/2/rs/16/32", msg)]
