"""Application messages and the type-43 archive link (core/status/application_metadata.py): each reason, code and
edge pinned against the survivors of `make mutation` (docs/QUALITY.md). Wire bytes are built here from the .proto
field numbers where the point is what a decoder of outside bytes does."""
from __future__ import annotations

import uuid

import pytest
from coincurve import PrivateKey

from core.archive.codec import keccak256
from core.pb import communities_archive_pb2 as archive_pb
from core.pb import status_application_metadata_pb2 as app_pb
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status import application_metadata as am
from core.status import payload_v1, topics
from core.status.errors import MessageDecodeError, SignatureError
from core.status.identity import sign_keccak

MAGNET = "magnet:?xt=urn:btih:" + "ab" * 20


def app_bytes(payload: bytes, mtype: int, key: PrivateKey | None) -> bytes:
    """ApplicationMetadataMessage by hand: signature = 1, payload = 2, type = 3."""
    def ld(field, b):
        return bytes([field << 3 | 2, len(b)]) + b
    out = (ld(1, sign_keccak(key, payload)) if key else b"") + ld(2, payload)
    return out + bytes([3 << 3, mtype]) if mtype else out


def link_body(clock: int, link: str) -> bytes:
    return archive_pb.CommunityMessageArchiveMagnetlink(clock=clock, magnet_uri=link).SerializeToString()


def test_message_type_numbers():
    assert (am.CHAT_MESSAGE, am.COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK) == (1, 43)
    assert am.MAX_CLOCK == 9_223_372_036_854_775_807


def test_installation_id_is_a_stable_uuid4_of_the_key(community):
    got = am.installation_id_for(community.private_key)
    want = uuid.UUID(bytes=keccak256(b"archivist-installation" + community.private_key.secret)[:16], version=4)
    assert got == str(want) and uuid.UUID(got).version == 4
    assert got == am.installation_id_for(PrivateKey(community.private_key.secret))


def test_wrap_application_is_the_hand_encoding(community):
    assert am.wrap_application(b"pay", 43, community.private_key) == app_bytes(b"pay", 43, community.private_key)
    assert am.wrap_application(b"pay", 1, None) == app_bytes(b"pay", 1, None)


def test_parse_application_fields(community):
    raw = app_bytes(b"pay", 7, community.private_key)
    m = am.parse_application(bytearray(raw))
    assert (m.type, m.payload, m.signature, m.signer) == (7, b"pay", raw[2:67], community.public_key)
    assert type(m.type) is int


def test_undecodable_application_message_names_the_type():
    with pytest.raises(MessageDecodeError) as e:
        am.parse_application(b"\x12\x05ab")                # field 2 claims 5 bytes, has 2
    assert str(e.value).startswith("not an ApplicationMetadataMessage: ")
    assert e.value.code == "message-undecodable" and e.value.__suppress_context__


def test_wrap_public_fields_and_parse():
    raw = am.wrap_public(b"APP", "dev-1")
    pm = proto_pb.ProtocolMessage.FromString(raw)
    assert (pm.installation_id, pm.public_message) == ("dev-1", b"APP")
    assert raw == b"\x12\x05dev-1" + b"\xb2\x06\x03APP"     # field 2, then field 102 (wire type 2)
    assert am.parse_protocol_message(bytearray(raw)).public_message == b"APP"


def test_undecodable_protocol_message():
    with pytest.raises(MessageDecodeError) as e:
        am.parse_protocol_message(b"\x12\x09short")
    assert str(e.value).startswith("not a ProtocolMessage: ") and e.value.code == "message-undecodable"
    assert e.value.__suppress_context__
    with pytest.raises(MessageDecodeError) as e:
        am.unwrap_public(b"\x12\x09short")
    assert str(e.value).startswith("not a ProtocolMessage: ")


def test_unwrap_public_reasons():
    with pytest.raises(MessageDecodeError) as e:
        am.unwrap_public(am.wrap_public(b"", "dev"))
    assert str(e.value) == "ProtocolMessage carries no message" and e.value.code == "message-undecodable"
    pm = proto_pb.ProtocolMessage(installation_id="x")
    pm.encrypted_message["none"].payload = b"secret"
    with pytest.raises(MessageDecodeError) as e:
        am.unwrap_public(pm.SerializeToString())
    assert str(e.value) == "ProtocolMessage is encrypted (hash ratchet or one-to-one), not public"
    assert e.value.code == "encrypted-message"
    pm.public_message = b"pub"                           # both: the public message wins
    assert am.unwrap_public(pm.SerializeToString()) == b"pub"


def test_open_protocol_payload(community):
    app = am.wrap_application(b"body", 1, community.private_key)
    m = am.open_protocol_payload(am.wrap_public(app, "i"))
    assert (m.type, m.payload, m.signer) == (1, b"body", community.public_key)


def test_is_magnet():
    assert am.ArchiveLinkMessage(1, "magnet:?xt=x", b"").is_magnet
    assert not am.ArchiveLinkMessage(1, "magnet:xt=x", b"").is_magnet
    assert not am.ArchiveLinkMessage(1, "zDvZRwzm" + "a" * 40, b"").is_magnet
    assert am.ArchiveLinkMessage(1, " MAGNET:?xt=x", b"").is_magnet   # core.archive.torrent.is_magnet_link's rule


def test_link_application_is_type_43_signed_over_the_body(community):
    raw = am.build_archive_link_application(community.private_key, 123, MAGNET)
    assert raw == app_bytes(link_body(123, MAGNET), 43, community.private_key)


def test_link_message_default_installation_id(community):
    pm = proto_pb.ProtocolMessage.FromString(am.build_archive_link_message(community.private_key, 5, MAGNET))
    assert pm.installation_id == am.installation_id_for(community.private_key)
    pm = proto_pb.ProtocolMessage.FromString(am.build_archive_link_message(community.private_key, 5, MAGNET, ""))
    assert pm.installation_id == ""                    # an explicit empty ID is kept, not replaced


def test_wrong_type_reason(community):
    with pytest.raises(MessageDecodeError) as e:
        am.parse_archive_link_application(app_bytes(link_body(1, MAGNET), 1, community.private_key))
    assert str(e.value) == "application message type 1 is not 43 (archive link)" and e.value.code == "wrong-type"


def test_unsigned_link_reason():
    with pytest.raises(SignatureError) as e:
        am.parse_archive_link_application(app_bytes(link_body(1, MAGNET), 43, None))
    assert str(e.value) == "archive-link message is not signed" and e.value.code == "bad-signature"


def test_undecodable_body_reason(community):
    with pytest.raises(MessageDecodeError) as e:
        am.parse_archive_link_application(app_bytes(b"\x12\x09short", 43, community.private_key))
    assert str(e.value).startswith("type-43 payload does not decode: ")
    assert e.value.code == "message-undecodable" and e.value.__suppress_context__


def test_link_without_link_reason(community):
    with pytest.raises(MessageDecodeError) as e:
        am.parse_archive_link_application(app_bytes(link_body(5, ""), 43, community.private_key))
    assert str(e.value) == "archive-link message has no link" and e.value.code == "message-undecodable"


def test_clock_limit_is_inclusive(community):
    ok = am.parse_archive_link_application(app_bytes(link_body(am.MAX_CLOCK, MAGNET), 43, community.private_key))
    assert (ok.clock, ok.link, ok.signer) == (am.MAX_CLOCK, MAGNET, community.public_key)
    with pytest.raises(MessageDecodeError) as e:
        am.parse_archive_link_application(app_bytes(link_body(am.MAX_CLOCK + 1, MAGNET), 43, community.private_key))
    assert str(e.value) == ("archive-link clock 9223372036854775808 is out of range (over 9223372036854775807 ms)")
    assert e.value.code == "bad-clock"


def test_community_check_reason_and_no_check_without_id(community, other_key):
    raw = am.build_archive_link_message(other_key, 9, MAGNET)
    assert am.parse_archive_link_message(raw).signer == other_key.public_key.format(compressed=False)
    with pytest.raises(SignatureError) as e:
        am.parse_archive_link_message(raw, community.community_id)
    assert str(e.value) == "archive-link message is not signed by the community key"
    assert e.value.code == "not-community-key"
    assert am.parse_archive_link_message(am.build_archive_link_message(community.private_key, 9, MAGNET),
                                         community.community_id).clock == 9


def test_seal_uses_the_chat_key_and_passes_padding_and_nonce(community):
    env = am.seal(b"PM", "chat-1", community.private_key, padding=b"\x01\x02", nonce=bytes(12))
    assert env[-12:] == bytes(12)
    out = payload_v1.decrypt(env, topics.symmetric_key("chat-1"))
    assert (out.data, out.padding, out.public_key) == (b"PM", b"\x01\x02", community.public_key)


def test_envelopes_default_community_and_chats(community):
    cid = "0x" + community.private_key.public_key.format(compressed=True).hex()
    got = am.archive_link_envelopes(community.private_key, 77, MAGNET, nonce=bytes(12), padding=b"\x00")
    chats = topics.archive_link_chat_ids(cid)
    assert [t for t, _ in got] == [topics.content_topic(c) for c in chats] and len(chats) == 2
    for c, (_, env) in zip(chats, got):
        m = am.open_archive_link_envelope(env, c, cid)
        assert (m.clock, m.link) == (77, MAGNET)
    one = am.archive_link_envelopes(community.private_key, 77, MAGNET, cid, chat_ids=("only",))
    assert [t for t, _ in one] == [topics.content_topic("only")]
    assert am.open_archive_link_envelope(one[0][1], "only", cid).link == MAGNET


def test_envelopes_for_a_given_community_id_use_its_chats(community, other_key):
    cid = "0x" + other_key.public_key.format(compressed=True).hex()
    got = am.archive_link_envelopes(community.private_key, 1, MAGNET, cid)
    assert [t for t, _ in got] == [topics.content_topic(c) for c in topics.archive_link_chat_ids(cid)]


def test_an_envelope_on_the_communitys_chat_signed_by_another_key_is_refused(community, other_key):
    """Members take archive links only from the control node: a stranger posting on the community's link chat,
    with a well-formed type-43 message, is refused when the envelope is opened."""
    cid = community.community_id
    chat = topics.archive_link_chat_ids(cid)[0]
    (_, env), = am.archive_link_envelopes(other_key, 5, MAGNET, cid, chat_ids=(chat,))
    assert am.parse_archive_link_message(payload_v1.decrypt(env, topics.symmetric_key(chat)).data).link == MAGNET
    with pytest.raises(SignatureError) as ei:
        am.open_archive_link_envelope(env, chat, cid)
    assert (ei.value.code, str(ei.value)) == ("not-community-key",
                                              "archive-link message is not signed by the community key")


def test_envelopes_are_signed_by_the_community_key_with_the_given_nonce(community):
    got = am.archive_link_envelopes(community.private_key, 5, MAGNET, nonce=b"\x07" * 12, padding=b"\x01")
    for topic, env in got:
        assert env[-12:] == b"\x07" * 12
        chat = next(c for c in topics.archive_link_chat_ids(community.community_id) if topics.content_topic(c) == topic)
        out = payload_v1.decrypt(env, topics.symmetric_key(chat))
        assert out.public_key == community.public_key and out.padding == b"\x01"


def test_decoding_without_recovering_the_signer(community):
    raw = app_bytes(b"pay", 7, community.private_key)
    m = am.parse_application(raw, recover=False)
    assert (m.type, m.payload, m.signature, m.signer) == (7, b"pay", raw[2:67], None)
    assert am.parse_application(raw).signer == community.public_key
    pm = am.wrap_public(raw, "i")
    assert am.open_protocol_payload(pm, False).signer is None and am.open_protocol_payload(pm, False).type == 7
    assert am.open_protocol_payload(pm).signer == community.public_key
    assert am.open_protocol_payload(pm, recover=True).payload == b"pay"


def test_a_payload_over_the_status_size_is_refused_unparsed():
    from core.status.application_metadata import MAX_STATUS_PAYLOAD, parse_protocol_message, payload_too_large
    from core.status.errors import MessageDecodeError
    assert MAX_STATUS_PAYLOAD == 1024 * 1024
    assert not payload_too_large(bytes(MAX_STATUS_PAYLOAD)) and payload_too_large(bytes(MAX_STATUS_PAYLOAD + 1))
    assert parse_protocol_message(b"\x12\x01i" + b"\x18\x00" * ((MAX_STATUS_PAYLOAD - 3) // 2)).installation_id == "i"
    with pytest.raises(MessageDecodeError) as e:
        parse_protocol_message(bytes(MAX_STATUS_PAYLOAD + 1))
    assert e.value.code == "payload-too-large"
    assert str(e.value) == "a payload of 1048577 bytes is larger than any Status message (1048576 bytes at most)"
