"""ApplicationMetadataMessage (signed application messages), the ProtocolMessage wrapper, and the type-43
archive-link (magnet link) message.

status-go chain for a public/community message: application protobuf -> ApplicationMetadataMessage{signature
= sign(keccak256(payload)), payload, type} -> ProtocolMessage{installation_id, public_message} -> payload-v1
envelope (symmetric key of the chat, signed by the sender) -> WakuMessage on the chat's content topic.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from coincurve import PrivateKey
from google.protobuf.message import DecodeError as _PbDecodeError

from core.archive.codec import keccak256
from core.pb import communities_archive_pb2 as archive_pb
from core.pb import status_application_metadata_pb2 as app_pb
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status import payload_v1, topics
from core.status.errors import MessageDecodeError, SignatureError
from core.status.identity import community_public_key, recover_keccak, sign_keccak
from core.waku.message import STATUS_MAX_MESSAGE_SIZE

CHAT_MESSAGE = app_pb.ApplicationMetadataMessage.CHAT_MESSAGE                                  # 1
COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK = app_pb.ApplicationMetadataMessage.COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK  # 43
_PB_ERRORS = (_PbDecodeError, RuntimeError, ValueError)
# A clock is milliseconds (uint64 on the wire); members store it in SQLite, whose integers are signed 64-bit:
# a larger clock is refused here (found by fuzzing: it crashed the member's link gate with OverflowError).
MAX_CLOCK = (1 << 63) - 1
# A payload the Status fleet cannot have carried (it relays whole messages of at most 1 MiB) is not opened: kept raw.
# Opening one costs protobuf up to ~65x its size in memory (a public message of millions of empty chat messages).
MAX_STATUS_PAYLOAD = STATUS_MAX_MESSAGE_SIZE


def payload_too_large(raw: bytes) -> bool:
    return len(raw) > MAX_STATUS_PAYLOAD


@dataclass(frozen=True, slots=True)
class ApplicationMessage:
    type: int
    payload: bytes
    signature: bytes
    signer: bytes | None          # 65-byte uncompressed public key, None when unsigned


def installation_id_for(key: PrivateKey) -> str:
    """A stable device ID for a key (status-go uses a random UUID per installation; any string is accepted)."""
    return str(uuid.UUID(bytes=keccak256(b"archivist-installation" + key.secret)[:16], version=4))


# ---------------------------------------------------------------- ApplicationMetadataMessage

def wrap_application(payload: bytes, message_type: int, signer: PrivateKey | None) -> bytes:
    """Encode an ApplicationMetadataMessage, signed over keccak256(payload) when `signer` is given."""
    msg = app_pb.ApplicationMetadataMessage(payload=payload, type=message_type)
    if signer is not None:
        msg.signature = sign_keccak(signer, payload)
    return msg.SerializeToString(deterministic=True)


def parse_application(raw: bytes, recover: bool = True) -> ApplicationMessage:
    """Decode and recover the signer (recover=False: leave it None). Raises MessageDecodeError or
    SignatureError."""
    msg = app_pb.ApplicationMetadataMessage()
    try:
        msg.ParseFromString(bytes(raw))
    except _PB_ERRORS as e:
        raise MessageDecodeError(f"not an ApplicationMetadataMessage: {e}") from None
    signer = recover_keccak(msg.payload, msg.signature) if msg.signature and recover else None
    return ApplicationMessage(int(msg.type), msg.payload, msg.signature, signer)


# ---------------------------------------------------------------- ProtocolMessage

def wrap_public(application_bytes: bytes, installation_id: str) -> bytes:
    """ProtocolMessage{installation_id (field 2), public_message (field 102)}; no bundle (status-go adds one)."""
    return proto_pb.ProtocolMessage(installation_id=installation_id,
                                    public_message=application_bytes).SerializeToString(deterministic=True)


def parse_protocol_message(raw: bytes) -> proto_pb.ProtocolMessage:
    if payload_too_large(raw):
        raise MessageDecodeError(f"a payload of {len(raw)} bytes is larger than any Status message "
                                 f"({MAX_STATUS_PAYLOAD} bytes at most)", code="payload-too-large")
    pm = proto_pb.ProtocolMessage()
    try:
        pm.ParseFromString(bytes(raw))
    except _PB_ERRORS as e:
        raise MessageDecodeError(f"not a ProtocolMessage: {e}") from None
    return pm


def unwrap_public(raw: bytes) -> bytes:
    """The public_message of a ProtocolMessage. Raises MessageDecodeError if it is encrypted or empty."""
    pm = parse_protocol_message(raw)
    if pm.public_message:
        return pm.public_message
    if pm.encrypted_message:
        raise MessageDecodeError("ProtocolMessage is encrypted (hash ratchet or one-to-one), not public",
                                 code="encrypted-message")
    raise MessageDecodeError("ProtocolMessage carries no message")


def open_protocol_payload(raw: bytes, recover: bool = True) -> ApplicationMessage:
    """Archived/received WakuMessage payload (a ProtocolMessage) -> verified ApplicationMessage (recover=False:
    decoded only, signer None)."""
    return parse_application(unwrap_public(raw), recover)


# ---------------------------------------------------------------- type 43: archive link

@dataclass(frozen=True, slots=True)
class ArchiveLinkMessage:
    clock: int                    # milliseconds
    link: str                     # magnet URI (torrent) or index CID (Codex)
    signer: bytes                 # 65-byte uncompressed public key that signed it

    @property
    def is_magnet(self) -> bool:
        from core.archive.torrent import is_magnet_link
        return is_magnet_link(self.link)


def build_archive_link_application(key: PrivateKey, clock: int, link: str) -> bytes:
    """ApplicationMetadataMessage{type 43, payload = CommunityMessageArchiveMagnetlink{clock, magnet_uri}}."""
    body = archive_pb.CommunityMessageArchiveMagnetlink(clock=clock, magnet_uri=link)
    return wrap_application(body.SerializeToString(deterministic=True), COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK, key)


def build_archive_link_message(key: PrivateKey, clock: int, link: str, installation_id: str | None = None) -> bytes:
    """The ProtocolMessage bytes that go into the payload-v1 envelope on the magnetlinks/memberUpdate chat."""
    inst = installation_id if installation_id is not None else installation_id_for(key)
    return wrap_public(build_archive_link_application(key, clock, link), inst)


def parse_archive_link_application(raw: bytes) -> ArchiveLinkMessage:
    app = parse_application(raw)
    if app.type != COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK:
        raise MessageDecodeError(f"application message type {app.type} is not 43 (archive link)", code="wrong-type")
    if app.signer is None:
        raise SignatureError("archive-link message is not signed")
    body = archive_pb.CommunityMessageArchiveMagnetlink()
    try:
        body.ParseFromString(app.payload)
    except _PB_ERRORS as e:
        raise MessageDecodeError(f"type-43 payload does not decode: {e}") from None
    if not body.magnet_uri:
        raise MessageDecodeError("archive-link message has no link")
    if body.clock > MAX_CLOCK:
        raise MessageDecodeError(f"archive-link clock {body.clock} is out of range (over {MAX_CLOCK} ms)",
                                 code="bad-clock")
    return ArchiveLinkMessage(body.clock, body.magnet_uri, app.signer)


def parse_archive_link_message(raw: bytes, community_id: str | None = None) -> ArchiveLinkMessage:
    """Parse a ProtocolMessage carrying a type-43 message. With `community_id`, also require that the
    community key signed it (SignatureError otherwise): members accept links only from the control node."""
    msg = parse_archive_link_application(unwrap_public(raw))
    if community_id is not None and msg.signer != community_public_key(community_id):
        raise SignatureError("archive-link message is not signed by the community key", code="not-community-key")
    return msg


# ---------------------------------------------------------------- on the wire (payload-v1 envelopes)

def seal(protocol_bytes: bytes, chat_id: str, signer: PrivateKey, **kw) -> bytes:
    """Payload-v1 envelope of a ProtocolMessage for a public chat (kw: padding, nonce, random_bytes)."""
    return payload_v1.encrypt(protocol_bytes, topics.symmetric_key(chat_id), signer=signer, **kw)


def archive_link_envelopes(key: PrivateKey, clock: int, link: str, community_id: str | None = None,
                           chat_ids: tuple[str, ...] | None = None, **kw) -> list[tuple[str, bytes]]:
    """[(content topic, envelope)] for announcing an archive link on each chosen chat (default: both)."""
    cid = community_id or "0x" + key.public_key.format(compressed=True).hex()
    chats = chat_ids if chat_ids is not None else topics.archive_link_chat_ids(cid)
    pm = build_archive_link_message(key, clock, link)
    return [(topics.content_topic(c), seal(pm, c, key, **kw)) for c in chats]


def open_archive_link_envelope(envelope: bytes, chat_id: str, community_id: str) -> ArchiveLinkMessage:
    """Decrypt an envelope received on `chat_id` and verify it came from the community key.

    Raises PayloadError, MessageDecodeError or SignatureError (all StatusError)."""
    decoded = payload_v1.decrypt(envelope, topics.symmetric_key(chat_id))
    return parse_archive_link_message(decoded.data, community_id)
