"""Pluggable unwrapping of an archived WakuMessage payload into application fields.

`default_unwrap` uses the Status layer (core/status: ProtocolMessage -> ApplicationMetadataMessage -> ChatMessage);
if that layer is missing or a payload does not open (encrypted, not a Status message), it returns None and the
hydrate job stores the raw payload only. A replacement is any picklable function `payload -> Unwrapped | None`
(it runs in the executors) that never raises for bad input (it returns None instead).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True, slots=True)
class Unwrapped:
    chat_id: str | None = None
    clock: int | None = None
    message_id: str | None = None
    message_type: int | None = None
    text: str | None = None
    author: bytes | None = None   # signer of the ApplicationMetadataMessage (65-byte uncompressed key)


Unwrapper = Callable[[bytes], Optional[Unwrapped]]


def status_unwrap(payload: bytes) -> Unwrapped | None:
    """ProtocolMessage -> ApplicationMetadataMessage (signer recovered) -> ChatMessage, with core/status.
    Other application types keep only their type; undecodable or encrypted payloads give None (stored raw)."""
    return _unwrap(payload, recover=True)[0]


def preview_unwrap(payload: bytes) -> tuple[Unwrapped | None, bool]:
    """status_unwrap without recovering the signer (most of its CPU): (the fields with no author, True when the
    message is signed, i.e. status_unwrap may still give an author, or None if the signature is bad). An unsigned
    message's answer is status_unwrap's."""
    return _unwrap(payload, recover=False)


def _unwrap(payload: bytes, recover: bool) -> tuple[Unwrapped | None, bool]:
    try:
        from core.status.application_metadata import CHAT_MESSAGE, open_protocol_payload
        from core.status.chat_message import decode_chat_message
    except ImportError:
        return None, False
    try:
        app = open_protocol_payload(payload, recover=recover)
    except Exception:  # noqa: BLE001 - outside data: any failure means "store it raw"
        return None, False
    signed = bool(app.signature)
    if app.type != CHAT_MESSAGE:
        return Unwrapped(message_type=app.type, author=app.signer), signed
    try:
        chat = decode_chat_message(app.payload)
    except Exception:  # noqa: BLE001
        return Unwrapped(message_type=app.type, author=app.signer), signed
    return Unwrapped(chat.chat_id, chat.clock, None, app.type, chat.text, app.signer), signed


default_unwrap = status_unwrap


def no_unwrap(payload: bytes) -> Unwrapped | None:
    return None


_PREVIEW_PARSERS: tuple | None = None


def _preview_parsers() -> tuple:
    global _PREVIEW_PARSERS
    if _PREVIEW_PARSERS is None:
        from core.pb import archivist_status_view_pb2 as view_pb
        from core.pb import status_application_metadata_pb2 as app_pb
        from core.pb import status_chat_message_pb2 as chat_pb
        from core.pb import status_protocol_message_pb2 as proto_pb
        from core.status.application_metadata import payload_too_large
        _PREVIEW_PARSERS = (proto_pb.ProtocolMessage.FromString, app_pb.ApplicationMetadataMessage.FromString,
                            chat_pb.ChatMessage.FromString, app_pb.ApplicationMetadataMessage.CHAT_MESSAGE,
                            view_pb.ProtocolChatView.FromString, payload_too_large)
    return _PREVIEW_PARSERS


def preview_opened(payload: bytes, sig: bytes | None) -> tuple[tuple, bool]:
    """preview_unwrap(payload) as the row's opened columns (sender, chat_id, clock, message_id, message_type, text;
    core.history_import.opened_columns with the envelope signer `sig`) and the `signed` flag, in a third of its
    time: ONE protobuf parse (proto/archivist_status_view.proto: the ProtocolMessage with its public message and
    that message's payload declared as the messages they carry) and nothing else. It is what an import's first
    pass runs for every message.

    The view gives the three parses' answer whenever it parses: each nested bytes field is a repeated message
    there, so its last occurrence is read, as the bytes field keeps its last; every other field has its type, so
    the outer parse fails where the ProtocolMessage's would. When the view does not parse (an inner message that
    does not decode, even one the three parses would not have opened) or its last public message is empty of
    fields (empty bytes, or bytes that only encode defaults: the two differ), the three parses decide
    (preview_parsed). tests/unit/status/test_unwrap_view.py holds both equal on every kind of payload, mutated and
    random ones, and tests/unit/test_history_import_authors.py holds it equal to preview_unwrap."""
    parsers = _PREVIEW_PARSERS or _preview_parsers()
    if parsers[5](payload):             # never carried by the Status fleet: stored raw, as status_unwrap does
        return (sig or None, None, None, None, None, None), False
    try:
        publics = parsers[4](payload).public_message
    except Exception:  # noqa: BLE001 - outside data: the three parses say what it is
        return preview_parsed(payload, sig)
    if not publics:                     # no public message (encrypted or empty ProtocolMessage): stored raw
        return (sig or None, None, None, None, None, None), False
    app = publics[-1]
    kind = app.type
    if kind != parsers[3]:
        if not app.ByteSize():          # b"" (raw) or b"\x18\x00" (type 0): only the bytes tell
            return preview_parsed(payload, sig)
        return (sig or None, None, None, None, kind, None), bool(app.signature)
    chats = app.payload
    if not chats:                       # no payload: ChatMessage of b"", every field its default
        return (sig or None, "", 0, None, kind, ""), bool(app.signature)
    chat = chats[-1]
    return (sig or None, chat.chat_id, chat.clock, None, kind, chat.text), bool(app.signature)


def preview_parsed(payload: bytes, sig: bytes | None) -> tuple[tuple, bool]:
    """preview_opened by the three parses (ProtocolMessage, ApplicationMetadataMessage, ChatMessage), each of the
    bytes the one before holds: what the one-parse view falls back to."""
    parse_protocol, parse_app, parse_chat, chat_type, _, too_large = _PREVIEW_PARSERS or _preview_parsers()
    sender = sig or None
    if too_large(payload):
        return (sender, None, None, None, None, None), False
    try:
        public = parse_protocol(payload).public_message
        if not public:                  # encrypted or empty ProtocolMessage: stored raw, as status_unwrap does
            return (sender, None, None, None, None, None), False
        app = parse_app(public)
    except Exception:  # noqa: BLE001 - outside data: any failure means "store it raw"
        return (sender, None, None, None, None, None), False
    kind, signed = app.type, bool(app.signature)
    if kind != chat_type:
        return (sender, None, None, None, kind, None), signed
    try:
        chat = parse_chat(app.payload)
    except Exception:  # noqa: BLE001
        return (sender, None, None, None, kind, None), signed
    return (sender, chat.chat_id, chat.clock, None, kind, chat.text), signed
