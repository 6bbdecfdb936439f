"""14/WAKU2-MESSAGE: codec with nwaku's presence rules, size limits and the deterministic hash.

The codec is written by hand (not with the generated class) because presence matters on the wire: nwaku
rejects a message whose `payload` (1) or `content_topic` (2) field is absent, while proto3 drops empty
non-optional fields when encoding. We therefore always write both, and on decode report which were present.
`core/pb/waku_message_pb2.py` (same schema) is used by tests as an independent cross-check.
"""
from __future__ import annotations

import hashlib
import struct
import time
from dataclasses import dataclass

from core.varint import DecodeError, iter_fields, write_varint, zigzag_decode, zigzag_encode

MAX_META_SIZE = 64
NWAKU_MAX_MESSAGE_SIZE = 150 * 1024    # nwaku's default --max-msg-size
STATUS_MAX_MESSAGE_SIZE = 1024 * 1024  # what the Status fleet carries
DEFAULT_MAX_MESSAGE_SIZE = STATUS_MAX_MESSAGE_SIZE
DEFAULT_MAX_FUTURE_S = 20.0            # nwaku's MaxMessageTimestampVariance
NS = 10**9


class InvalidMessage(ValueError):
    """A WakuMessage that must not be relayed, stored or published. The text says what was wrong; `reason` is
    a short fixed label for counting ("oversize", "future timestamp", ...)."""

    def __init__(self, text: str, reason: str | None = None):
        super().__init__(text)
        self.reason = reason or text


@dataclass(frozen=True)
class WakuMessage:
    payload: bytes
    content_topic: str
    version: int | None = None
    timestamp: int | None = None          # Unix nanoseconds
    meta: bytes | None = None
    ephemeral: bool | None = None
    rate_limit_proof: bytes | None = None  # encoded RateLimitProof, kept opaque

    @property
    def is_ephemeral(self) -> bool:
        return bool(self.ephemeral)

    def encode(self) -> bytes:
        return encode_message(self)

    def hash(self, pubsub_topic: str) -> bytes:
        return message_hash(pubsub_topic, self)


def _key(field: int, wire: int) -> bytes:
    return write_varint(field << 3 | wire)


def _ld(field: int, data: bytes) -> bytes:
    return _key(field, 2) + write_varint(len(data)) + data


def encode_message(m: WakuMessage) -> bytes:
    out = bytearray(_ld(1, bytes(m.payload)))
    out += _ld(2, m.content_topic.encode())
    if m.version is not None:
        out += _key(3, 0) + write_varint(m.version & 0xFFFFFFFF)
    if m.timestamp is not None:
        out += _key(10, 0) + write_varint(zigzag_encode(m.timestamp))
    if m.meta is not None:
        out += _ld(11, bytes(m.meta))
    if m.rate_limit_proof is not None:
        out += _ld(21, bytes(m.rate_limit_proof))
    if m.ephemeral is not None:
        out += _key(31, 0) + write_varint(1 if m.ephemeral else 0)
    return bytes(out)


_EXPECTED_WIRE = {1: 2, 2: 2, 3: 0, 10: 0, 11: 2, 21: 2, 31: 0}
# A WakuMessage has 7 fields; fields it does not know are skipped, as protobuf does, up to this many in all. Without
# a bound, a relay peer's 1 MiB message of tiny unknown fields cost ~0.6 CPU-s to walk (in Python), was accepted and
# relayed on; a 64 MiB store page of them ~46 s.
MAX_FIELDS = 64


def decode_message(data: bytes, *, require_presence: bool = True) -> WakuMessage:
    """Decode a WakuMessage. Raises DecodeError on malformed bytes or (with require_presence) when
    field 1 or 2 is absent, as nwaku does."""
    f: dict = {}
    for n, (field, wire, val) in enumerate(iter_fields(bytes(data))):
        if n == MAX_FIELDS:
            raise DecodeError(f"more than {MAX_FIELDS} fields (a Waku message has 7)")
        want = _EXPECTED_WIRE.get(field)
        if want is None:
            continue  # unknown field: skipped, like protobuf
        if wire != want:
            raise DecodeError(f"field {field}: wire type {wire}, expected {want}")
        f[field] = val  # last one wins, as in protobuf
    if require_presence and (1 not in f or 2 not in f):
        raise DecodeError("payload and content_topic must both be present")
    try:
        topic = bytes(f.get(2, b"")).decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError("content_topic is not UTF-8") from e
    return WakuMessage(
        payload=bytes(f.get(1, b"")), content_topic=topic,
        version=(f[3] & 0xFFFFFFFF) if 3 in f else None,
        timestamp=_to_sint64(zigzag_decode(f[10])) if 10 in f else None,
        meta=bytes(f[11]) if 11 in f else None,
        rate_limit_proof=bytes(f[21]) if 21 in f else None,
        ephemeral=bool(f[31]) if 31 in f else None,
    )


def _to_sint64(v: int) -> int:
    v &= (1 << 64) - 1  # zigzag of a 64-bit value (core.varint refuses wider ones)
    return v - (1 << 64) if v >= 1 << 63 else v


def message_hash(pubsub_topic: str, m: WakuMessage) -> bytes:
    """Deterministic hash: sha256(pubsub_topic || payload || content_topic || meta || uint64_be(timestamp))."""
    h = hashlib.sha256()
    h.update(pubsub_topic.encode())
    h.update(m.payload)
    h.update(m.content_topic.encode())
    if m.meta:
        h.update(m.meta)
    h.update(struct.pack(">Q", (m.timestamp or 0) & 0xFFFFFFFFFFFFFFFF))
    return h.digest()


def v2_digest(m: WakuMessage) -> bytes:
    """Store v2.0.0-beta4 Index.digest: sha256(content_topic || payload) (seed 004)."""
    return hashlib.sha256(m.content_topic.encode() + m.payload).digest()


def check_timestamp(timestamp: int | None, *, now_ns: int, max_future_ns: int) -> None:
    """Refuse a missing (absent or 0), negative or too-far-future timestamp. Old timestamps are accepted:
    history is what the store and the archives are for."""
    if timestamp is None or timestamp == 0:
        raise InvalidMessage("missing timestamp")
    if timestamp < 0:
        raise InvalidMessage("negative timestamp")
    ahead = timestamp - now_ns
    if ahead > max_future_ns:
        raise InvalidMessage(f"timestamp {_seconds(ahead)} s in the future (limit {_seconds(max_future_ns)} s)",
                             "future timestamp")


def _seconds(ns: int) -> str:
    return f"{ns / NS:.0f}" if ns >= NS else f"{ns / NS:.3g}"


def validate_message(m: WakuMessage, *, max_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                     encoded_size: int | None = None, now_ns: int | None = None,
                     max_future_ns: int = int(DEFAULT_MAX_FUTURE_S * NS)) -> None:
    """Edge checks for relay/lightpush/publish: raises InvalidMessage with a reason. `now_ns` defaults to the
    wall clock (callers with an injectable clock pass it)."""
    if not m.payload:
        raise InvalidMessage("empty payload")
    if not m.content_topic:
        raise InvalidMessage("empty content topic")
    if m.meta is not None and len(m.meta) > MAX_META_SIZE:
        raise InvalidMessage(f"meta is {len(m.meta)} bytes (max {MAX_META_SIZE})", "oversize meta")
    size = encoded_size if encoded_size is not None else len(encode_message(m))
    if size > max_size:
        raise InvalidMessage(f"message is {size} bytes (max {max_size})", "oversize")
    check_timestamp(m.timestamp, now_ns=time.time_ns() if now_ns is None else now_ns, max_future_ns=max_future_ns)
