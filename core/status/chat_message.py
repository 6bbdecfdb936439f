"""A ChatMessage subset (text, chat ID, clock, timestamp, content type) so imported history can be shown."""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError as _PbDecodeError

from core.archive.codec import ArchiveMessage
from core.pb import status_chat_message_pb2 as chat_pb
from core.status.application_metadata import CHAT_MESSAGE, ApplicationMessage, open_protocol_payload
from core.status.errors import MessageDecodeError

TEXT_PLAIN = chat_pb.ChatMessage.TEXT_PLAIN
COMMUNITY_CHAT = chat_pb.COMMUNITY_CHAT


@dataclass(frozen=True, slots=True)
class ChatMessageView:
    clock: int
    timestamp_ms: int
    text: str
    chat_id: str
    content_type: int
    message_type: int = 0
    display_name: str = ""
    response_to: str = ""

    @property
    def content_type_name(self) -> str:
        try:
            return chat_pb.ChatMessage.ContentType.Name(self.content_type)
        except ValueError:
            return f"CONTENT_TYPE_{self.content_type}"


def encode_chat_message(text: str, chat_id: str, clock: int, timestamp_ms: int, *,
                        content_type: int = TEXT_PLAIN, message_type: int = COMMUNITY_CHAT,
                        display_name: str = "", response_to: str = "") -> bytes:
    return chat_pb.ChatMessage(clock=clock, timestamp=timestamp_ms, text=text, chat_id=chat_id,
                               content_type=content_type, message_type=message_type, display_name=display_name,
                               response_to=response_to).SerializeToString(deterministic=True)


def decode_chat_message(raw: bytes) -> ChatMessageView:
    """Decode the fields we show; unknown fields (images, stickers, links...) are ignored. Raises MessageDecodeError."""
    m = chat_pb.ChatMessage()
    try:
        m.ParseFromString(bytes(raw))
    except (_PbDecodeError, RuntimeError, ValueError) as e:
        raise MessageDecodeError(f"not a ChatMessage: {e}") from None
    return ChatMessageView(m.clock, m.timestamp, m.text, m.chat_id, int(m.content_type), int(m.message_type),
                           m.display_name, m.response_to)


@dataclass(frozen=True, slots=True)
class ArchivedChat:
    """One archived WakuMessage opened down to its chat message."""

    author: bytes                 # 65-byte uncompressed key that signed the application message
    envelope_signer: bytes        # WakuMessage.sig as stored by status-go
    timestamp: int                # seconds (Waku)
    message: ChatMessageView


def open_archived_chat(m: ArchiveMessage) -> ArchivedChat | None:
    """ProtocolMessage -> ApplicationMetadataMessage -> ChatMessage for an archived message.

    Returns None for other application types (reactions, community updates...). Raises StatusError subclasses
    for undecodable, encrypted or badly signed payloads."""
    app: ApplicationMessage = open_protocol_payload(m.payload)
    if app.type != CHAT_MESSAGE:
        return None
    if app.signer is None:
        raise MessageDecodeError("chat message is not signed", code="unsigned")
    return ArchivedChat(app.signer, m.sig, m.timestamp, decode_chat_message(app.payload))
