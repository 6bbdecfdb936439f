import pytest
from hypothesis import given, settings, strategies as st

from core.archive.codec import ArchiveMessage
from core.status import application_metadata as am
from core.status.chat_message import decode_chat_message, encode_chat_message, open_archived_chat
from core.status.errors import StatusError


def test_chat_message_subset_round_trip():
    raw = encode_chat_message("gm ☀", "0xabc-chan", 42, 1_700_000_000_000, display_name="alice")
    v = decode_chat_message(raw)
    assert (v.text, v.chat_id, v.clock, v.timestamp_ms, v.content_type, v.message_type, v.display_name) == \
        ("gm ☀", "0xabc-chan", 42, 1_700_000_000_000, 1, 5, "alice")
    assert v.content_type_name == "TEXT_PLAIN"


def test_unknown_fields_are_ignored():
    # field 10 (ImageMessage) and field 19 (customization_color) are not in our subset
    raw = encode_chat_message("x", "c", 1, 2) + bytes([0x52, 0x02, 0x08, 0x01]) + bytes([0x98, 0x01, 0x07])
    assert decode_chat_message(raw).text == "x"


def test_open_archived_chat_full_chain(community):
    chat = encode_chat_message("hello", "chan", 7, 8)
    pm = am.wrap_public(am.wrap_application(chat, am.CHAT_MESSAGE, community.private_key), "inst")
    row = ArchiveMessage(sig=community.public_key, timestamp=9, topic=b"abcd", payload=pm, hash=b"\x01" * 32)
    out = open_archived_chat(row)
    assert out.author == community.public_key and out.message.text == "hello" and out.timestamp == 9
    other = am.wrap_public(am.wrap_application(b"", 43, community.private_key), "inst")
    assert open_archived_chat(ArchiveMessage(b"", 1, b"abcd", other)) is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_decode(blob):
    try:
        decode_chat_message(blob)
    except StatusError:
        pass
    try:
        open_archived_chat(ArchiveMessage(b"", 1, b"abcd", blob))
    except StatusError:
        pass
