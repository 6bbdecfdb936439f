"""14/WAKU2-MESSAGE: RFC hash vectors, codec presence rules, limits, fuzzing."""
import hashlib

import pytest
from hypothesis import given, settings, strategies as st

from core.pb import waku_message_pb2
from core.varint import iter_fields
from core.waku.message import (MAX_FIELDS, DecodeError, InvalidMessage, WakuMessage, decode_message, encode_message,
                               message_hash, v2_digest, validate_message)
from core.waku.relay import RelayValidator

PUBSUB = "/waku/2/default-waku/proto"
CT = "/waku/2/default-content/proto"
TS = 0x175789BFA23F8400


@pytest.mark.parametrize("payload,meta,expected", [
    # the four vectors of RFC 14/WAKU2-MESSAGE "Deterministic message hashing"
    ("010203045445535405060708", "73757065722d736563726574",
     "64cce733fed134e83da02b02c6f689814872b1a0ac97ea56b76095c3c72bfe05"),
    ("010203045445535405060708", bytes(range(64)).hex(),
     "7158b6498753313368b9af8f6e0a0a05104f68f972981da42a43bc53fb0c1b27"),
    ("010203045445535405060708", None,
     "a2554498b31f5bcdfcbf7fa58ad1c2d45f0254f3f8110a85588ec3cf10720fd8"),
    ("", "73757065722d736563726574",
     "483ea950cb63f9b9d6926b262bb36194d3f40a0463ce8446228350bd44e96de4"),
])
def test_rfc_hash_vectors(payload, meta, expected):
    m = WakuMessage(bytes.fromhex(payload), CT, timestamp=TS, meta=bytes.fromhex(meta) if meta else None)
    assert message_hash(PUBSUB, m).hex() == expected
    # the hash survives an encode/decode round trip
    assert decode_message(encode_message(m)).hash(PUBSUB).hex() == expected


def test_v2_digest_is_sha256_of_topic_then_payload():
    m = WakuMessage(b"abc", "/a/1/b/proto", timestamp=1)
    assert v2_digest(m) == hashlib.sha256(b"/a/1/b/proto" + b"abc").digest()


def test_roundtrip_and_crosscheck_with_protobuf():
    m = WakuMessage(b"\x00hi", "/app/1/chat/proto", version=1, timestamp=-5, meta=b"m", ephemeral=True,
                    rate_limit_proof=b"\x0a\x01\x02")
    wire = encode_message(m)
    pb = waku_message_pb2.WakuMessage.FromString(wire)
    assert (pb.payload, pb.content_topic, pb.version, pb.timestamp, pb.meta, pb.ephemeral) == \
        (m.payload, m.content_topic, 1, -5, b"m", True)
    assert pb.rate_limit_proof.proof == b"\x02"
    assert decode_message(pb.SerializeToString()) == m
    assert decode_message(wire) == m


def test_empty_payload_is_still_written_on_the_wire():
    wire = encode_message(WakuMessage(b"", "/a/1/b/c", timestamp=1))
    assert wire.startswith(b"\x0a\x00")  # field 1, length 0
    assert decode_message(wire).payload == b""


def test_missing_payload_or_topic_field_is_rejected():
    pb = waku_message_pb2.WakuMessage(content_topic="/a/1/b/c", timestamp=1)  # proto3 omits empty payload
    with pytest.raises(DecodeError):
        decode_message(pb.SerializeToString())
    assert decode_message(pb.SerializeToString(), require_presence=False).content_topic == "/a/1/b/c"
    with pytest.raises(DecodeError):
        decode_message(waku_message_pb2.WakuMessage(payload=b"x").SerializeToString())


@pytest.mark.parametrize("bad", [b"\x0a\x05ab", b"\x0a", b"\x12\x02\xff\xfe", b"\x08\x01",  # truncated/utf8/wire
                                 b"\x0a\x01a\x12\x01a" + b"\x50" + b"\xff" * 11, b"\x00\x00", b"\x0f"])
def test_malformed_bytes_raise_decode_error(bad):
    with pytest.raises(DecodeError):
        decode_message(bad)


def test_unknown_fields_are_skipped():
    wire = encode_message(WakuMessage(b"p", "/a/1/b/c", timestamp=3)) + b"\xa0\x06\x07"  # field 100 varint
    assert decode_message(wire).payload == b"p"


def test_unknown_fields_are_skipped_up_to_the_bound():
    """A message of tiny unknown fields is refused after MAX_FIELDS, without walking the rest: a relay peer's 1 MiB
    of them would otherwise be walked in Python (~0.6 CPU-s), accepted and relayed on."""
    wire = encode_message(WakuMessage(b"p", "/a/1/b/c", timestamp=3, meta=b"m", version=1, ephemeral=True))
    known = len(list(iter_fields(wire)))
    at_bound = wire + b"\x20\x00" * (MAX_FIELDS - known)             # field 4, varint 0: unknown
    assert decode_message(at_bound).meta == b"m"
    with pytest.raises(DecodeError) as e:
        decode_message(at_bound + b"\x20\x00")
    assert str(e.value) == "more than 64 fields (a Waku message has 7)"
    big = wire + b"\x20\x00" * (1 << 19)                             # 1 MiB
    with pytest.raises(DecodeError):
        decode_message(big)
    relay = RelayValidator(2 << 20)                                    # refused, not relayed on
    assert relay.check(big) is None and relay.rejected["malformed"] == 1


def test_validate_limits():
    ok = WakuMessage(b"x", "/a/1/b/c", timestamp=1)
    validate_message(ok)
    for bad in [WakuMessage(b"", "/a/1/b/c", timestamp=1), WakuMessage(b"x", "", timestamp=1),
                WakuMessage(b"x", "/a/1/b/c"), WakuMessage(b"x", "/a/1/b/c", timestamp=1, meta=b"m" * 65),
                WakuMessage(b"x" * 2000, "/a/1/b/c", timestamp=1)]:
        with pytest.raises(InvalidMessage):
            validate_message(bad, max_size=1024)
    validate_message(WakuMessage(b"x", "/a/1/b/c", timestamp=1, meta=b"m" * 64))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_decoder_only_raises_decode_error(data):
    try:
        m = decode_message(data)
    except DecodeError:
        return
    assert decode_message(encode_message(m)) == m


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.text(max_size=20), st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
       st.one_of(st.none(), st.binary(max_size=64)), st.one_of(st.none(), st.booleans()))
def test_fuzz_roundtrip(payload, topic, ts, meta, eph):
    m = WakuMessage(payload, topic, timestamp=ts, meta=meta, ephemeral=eph)
    assert decode_message(encode_message(m)) == m
