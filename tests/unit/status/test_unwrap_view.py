"""The import's first pass opens each archived payload with ONE protobuf parse (core/status/unwrap.py preview_opened,
proto/archivist_status_view.proto) where it used three (preview_parsed: ProtocolMessage, ApplicationMetadataMessage,
ChatMessage). Both must give the same columns and `signed` flag for every payload: valid ones of every kind, the
shapes where the two readings of the wire could part (a field written twice, empty or default-only messages, an
inner message that does not decode), and mutated and random bytes. And the shortcut of the encryption check
(archive_encryption.may_be_encrypted) must never call a hash-ratchet message plain."""
from __future__ import annotations

import hashlib
import random

import pytest
from coincurve import PrivateKey
from hypothesis import given, settings, strategies as st

import core.status.unwrap as U
from core.pb import status_application_metadata_pb2 as app_pb
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
from core.status.chat_message import encode_chat_message
from core.varint import write_varint

KEY = PrivateKey(hashlib.sha256(b"view author").digest())
SIG = b"\x04" + bytes(64)


def field(number: int, data: bytes) -> bytes:
    """A length-delimited field, written by hand (so that a field can be written twice)."""
    return write_varint(number << 3 | 2) + write_varint(len(data)) + data


def chat(i: int = 1, text: str = "hello") -> bytes:
    return encode_chat_message(f"{text} {i}", f"chat-{i}", 10 + i, 1_700_000_000_000 + i)


def app(payload: bytes, kind: int = CHAT_MESSAGE, signed: bool = True) -> bytes:
    return wrap_application(payload, kind, KEY if signed else None)


def payloads() -> list[bytes]:
    """Every kind of payload, and the shapes where one parse and three could part."""
    good = wrap_public(app(chat()), "inst")
    enc = proto_pb.ProtocolMessage(installation_id="i")
    enc.encrypted_message["none"].payload = b"x" * 40
    both = proto_pb.ProtocolMessage(installation_id="i", public_message=app(chat(2)))
    both.encrypted_message["none"].payload = b"y"
    bundle = proto_pb.ProtocolMessage(installation_id="i", public_message=app(chat(3)))
    bundle.bundles.add(identity=b"k", timestamp=5).signed_pre_keys["d"].version = 1
    zero_sig = app_pb.ApplicationMetadataMessage(payload=chat(4), type=CHAT_MESSAGE, signature=b"\0" * 65)
    return [
        good, wrap_public(app(chat(), signed=False), "inst"), wrap_public(app(b"\x08\x01", 7), "inst"),
        wrap_public(zero_sig.SerializeToString(), "inst"), wrap_public(app(b"\xff\xff\xff"), "inst"),
        enc.SerializeToString(), both.SerializeToString(), bundle.SerializeToString(),
        b"", b"not a status message", b"\x12\x02\xff\xfe" + field(102, app(chat())),       # bad UTF-8 installation
        field(102, b""), field(102, b"\x18\x00"), field(102, b"\x18\x07"), field(102, b"\x08\x00"),
        field(102, app(b"")), field(102, app(b"", signed=False)), field(102, b"\x18\x01"),
        field(102, app(chat(1))) + field(102, app(chat(2))),             # written twice: the last one counts
        field(102, app(chat(1))) + field(102, b""),                      # ... even when it is empty
        field(102, app(chat(1))) + field(102, b"\x18\x00"),
        field(102, b"\xff") + field(102, app(chat(2))),                  # an earlier one that does not decode
        field(102, field(2, chat(1)) + field(2, chat(2)) + b"\x18\x01"),   # the chat written twice
        field(102, field(2, chat(1)) + field(2, b"\xff") + b"\x18\x01"),
        field(102, field(2, b"\xff") + field(2, chat(2)) + b"\x18\x01"),
        field(102, field(2, chat(1)) + b"\x18\x01" + b"\x18\x2b"),        # type written twice: 43
        field(102, field(2, b"\x1a\x02\xff\xfe") + b"\x18\x2b"),          # not a chat, and not one either
        field(102, field(2, b"\x1a\x02\xff\xfe") + b"\x18\x01"),          # a chat with bad UTF-8 text
        field(102, b"\x18\x01") + b"\xa0\x06\x05",                        # field 102 as a varint after
        b"\xb0\x06\x01" + field(102, app(chat())),                        # an unknown field 102 varint first
        field(102, app(chat())) + b"\xb0\x06\x01",                        # ... and last
        field(102, b"\x18\xff\xff\xff\xff\x0f" + field(2, chat())),       # a negative type, 5 bytes
        field(102, b"\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),     # a negative type, 10 bytes
        good[:-1], good + b"\x00", good + b"\x08",
    ]


def same(payload: bytes, sig: bytes | None) -> None:
    assert U.preview_opened(payload, sig) == U.preview_parsed(payload, sig), payload.hex()


@pytest.mark.parametrize("sig", [SIG, b"", None])
def test_one_parse_gives_the_three_parses_answer_on_every_shape(sig):
    for p in payloads():
        same(p, sig)


def test_the_shapes_reach_every_branch_of_the_one_parse():
    """The cases above are not all answered by the fallback: most take the view's own branches."""
    seen = []
    real = U.preview_parsed
    U.preview_parsed = lambda p, s: (seen.append(p), real(p, s))[1]
    try:
        for p in payloads():
            U.preview_opened(p, SIG)
    finally:
        U.preview_parsed = real
    ps = payloads()
    assert ps[0] not in seen and field(102, app(chat(1))) + field(102, app(chat(2))) not in seen
    assert field(102, b"") in seen and field(102, b"\x18\x00") in seen and ps[4] in seen
    assert U.preview_opened(ps[0], SIG) == ((SIG, "chat-1", 11, None, CHAT_MESSAGE, "hello 1"), True)
    assert U.preview_opened(field(102, app(chat(1))) + field(102, app(chat(2))), SIG)[0][1] == "chat-2"
    assert 0 < len(seen) < len(ps) // 2


def mutations(seed: int, n: int) -> list[bytes]:
    rnd, base = random.Random(seed), payloads()
    out = []
    for _ in range(n):
        b = bytearray(rnd.choice(base))
        for _ in range(rnd.randint(1, 3)):
            op = rnd.randrange(4)
            if op == 0 and b:
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            elif op == 1 and b:
                del b[rnd.randrange(len(b)):]
            elif op == 2:
                b[rnd.randrange(len(b) + 1):0] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
            else:
                b += field(rnd.choice((2, 3, 101, 102)), bytes(rnd.choice(base)[:rnd.randint(0, 40)]))
        out.append(bytes(b))
    return out


def test_mutated_payloads_get_the_same_answer_both_ways():
    for p in mutations(7, 4000):
        same(p, SIG)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_get_the_same_answer_both_ways(blob):
    same(blob, SIG)
    same(field(102, blob), None)
    same(field(102, field(2, blob) + b"\x18\x01"), SIG)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.binary(max_size=120), st.integers(0, 3))
def test_nested_fields_written_twice_get_the_same_answer(a, b, kind):
    inner = field(2, a) + field(2, b) + write_varint(3 << 3) + write_varint(kind)
    same(field(102, inner), SIG)
    same(field(102, a) + field(102, inner), SIG)


def test_a_payload_larger_than_any_status_message_is_kept_raw_by_every_reader():
    """The Status fleet relays whole messages of at most 1 MiB: a larger payload never travelled and is not opened
    (protobuf could take ~65x its size in memory: a public message of millions of empty chat messages). Every
    reader says "stored raw" alike; one byte less is opened as before."""
    from core.status.application_metadata import MAX_STATUS_PAYLOAD, open_protocol_payload
    from core.status.errors import MessageDecodeError

    def padded_to(size: int) -> bytes:      # a signed chat message whose text makes the payload `size` bytes
        text = "x" * (size - len(wrap_public(app(chat(1, "")), "i")))
        for _ in range(3):                  # the varint lengths grow with the text: settle them
            p = wrap_public(app(chat(1, text)), "i")
            text = text[:len(text) - (len(p) - size)]
        p = wrap_public(app(chat(1, text)), "i")
        assert len(p) == size
        return p

    fits, over = padded_to(MAX_STATUS_PAYLOAD), padded_to(MAX_STATUS_PAYLOAD + 1)
    assert U.status_unwrap(fits).chat_id == "chat-1" and U.preview_opened(fits, SIG)[0][1] == "chat-1"
    raw = ((SIG, None, None, None, None, None), False)
    assert U.preview_opened(over, SIG) == U.preview_parsed(over, SIG) == raw
    assert U.status_unwrap(over) is None and U.preview_unwrap(over) == (None, False)
    with pytest.raises(MessageDecodeError) as e:
        open_protocol_payload(over)
    assert e.value.code == "payload-too-large"
    assert str(e.value) == "a payload of 1048577 bytes is larger than any Status message (1048576 bytes at most)"
    bomb = field(102, b"\x18\x01" + b"\x12\x00" * (MAX_STATUS_PAYLOAD // 2))     # millions of empty chats
    assert U.preview_opened(bomb, None) == ((None, None, None, None, None, None), False)
