import pytest
from hypothesis import given, settings, strategies as st

from core.pb import communities_archive_pb2 as archive_pb
from core.pb import status_application_metadata_pb2 as app_pb
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status import application_metadata as am
from core.status import topics
from core.status.errors import MessageDecodeError, PayloadError, SignatureError, StatusError
from core.status.identity import recover_keccak

MAGNET = "magnet:?xt=urn:btih:" + "ab" * 20 + "&dn=x"


def test_application_message_signed_over_keccak_of_payload(community):
    raw = am.wrap_application(b"payload", am.CHAT_MESSAGE, community.private_key)
    m = app_pb.ApplicationMetadataMessage.FromString(raw)
    assert m.type == 1 and m.payload == b"payload" and len(m.signature) == 65
    assert recover_keccak(b"payload", m.signature) == community.public_key
    parsed = am.parse_application(raw)
    assert parsed.signer == community.public_key and parsed.type == 1


def test_unsigned_application_message_has_no_signer():
    assert am.parse_application(am.wrap_application(b"p", am.CHAT_MESSAGE, None)).signer is None


def test_archive_link_message_round_trip_and_wire_fields(community):
    pm_raw = am.build_archive_link_message(community.private_key, 1_700_000_000_123, MAGNET, installation_id="dev-1")
    pm = proto_pb.ProtocolMessage.FromString(pm_raw)
    assert pm.installation_id == "dev-1" and not pm.encrypted_message
    app = app_pb.ApplicationMetadataMessage.FromString(pm.public_message)
    assert app.type == 43
    body = archive_pb.CommunityMessageArchiveMagnetlink.FromString(app.payload)
    assert body.clock == 1_700_000_000_123 and body.magnet_uri == MAGNET
    link = am.parse_archive_link_message(pm_raw, community.community_id)
    assert (link.clock, link.link, link.signer, link.is_magnet) == (1_700_000_000_123, MAGNET, community.public_key, True)


def test_archive_link_from_another_key_is_rejected(community, other_key):
    pm_raw = am.build_archive_link_message(other_key, 5, MAGNET)
    with pytest.raises(SignatureError) as e:
        am.parse_archive_link_message(pm_raw, community.community_id)
    assert e.value.code == "not-community-key"


def test_archive_link_with_swapped_payload_is_rejected(community):
    """A valid signature moved onto a different link recovers some other key: rejected."""
    app = app_pb.ApplicationMetadataMessage.FromString(am.build_archive_link_application(community.private_key, 5, MAGNET))
    app.payload = archive_pb.CommunityMessageArchiveMagnetlink(clock=6, magnet_uri=MAGNET).SerializeToString()
    pm_raw = am.wrap_public(app.SerializeToString(), "x")
    with pytest.raises(SignatureError):
        am.parse_archive_link_message(pm_raw, community.community_id)


def test_wrong_type_and_unsigned_are_rejected(community):
    with pytest.raises(MessageDecodeError):
        am.parse_archive_link_message(am.wrap_public(am.wrap_application(b"", 1, community.private_key), "x"))
    body = archive_pb.CommunityMessageArchiveMagnetlink(clock=1, magnet_uri=MAGNET).SerializeToString()
    with pytest.raises(SignatureError):
        am.parse_archive_link_message(am.wrap_public(am.wrap_application(body, 43, None), "x"))


def test_envelopes_on_both_chats_open_only_with_their_chat_key(community):
    envs = am.archive_link_envelopes(community.private_key, 77, MAGNET)
    chats = topics.archive_link_chat_ids(community.community_id)
    assert [ct for ct, _ in envs] == [topics.content_topic(c) for c in chats]
    for (ct, env), chat in zip(envs, chats):
        assert am.open_archive_link_envelope(env, chat, community.community_id).clock == 77
    with pytest.raises(PayloadError):
        am.open_archive_link_envelope(envs[0][1], chats[1], community.community_id)


def test_encrypted_protocol_message_is_not_public():
    pm = proto_pb.ProtocolMessage(installation_id="x")
    pm.encrypted_message["none"].payload = b"abc"
    with pytest.raises(MessageDecodeError) as e:
        am.unwrap_public(pm.SerializeToString())
    assert e.value.code == "encrypted-message"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_decoders_raise_only_status_errors(blob):
    for fn in (am.parse_application, am.unwrap_public, am.parse_archive_link_message, am.open_protocol_payload):
        try:
            fn(blob)
        except StatusError:
            pass


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=400), st.integers(min_value=1, max_value=255))
def test_fuzz_garbled_link_message_never_passes_as_community_signed(pos, flip):
    from coincurve import PrivateKey
    from core.archive.codec import keccak256
    key = PrivateKey(keccak256(b"fuzz-community"))
    cid = "0x" + key.public_key.format(compressed=True).hex()
    raw = bytearray(am.build_archive_link_message(key, 99, MAGNET, installation_id="i"))
    pos %= len(raw)
    raw[pos] ^= flip
    try:
        link = am.parse_archive_link_message(bytes(raw), cid)
    except StatusError:
        return
    # only bytes outside the signed payload (installation ID, type tag, framing) may change without detection
    assert (link.clock, link.link) == (99, MAGNET)
