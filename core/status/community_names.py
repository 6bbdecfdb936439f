"""Channel names from a community description (status-go `protocol/protobuf/communities.proto`, commit c72f491).

The owner publishes `CommunityDescription` as an ApplicationMetadataMessage of type COMMUNITY_DESCRIPTION (25),
signed with the community key. Its `chats` (field 6) map each channel UUID to a `CommunityChat` whose `identity`
(field 3, a `ChatIdentity`) carries `display_name` (field 4). A channel's chat ID is the community ID followed by
the UUID (status-go `communities.ChatID`). Only these fields are read, with the shared protobuf field walker: the
bytes come from the network, so anything malformed raises CommunityDescriptionError and nothing else.
"""
from __future__ import annotations

from core.status.errors import StatusError
from core.varint import DecodeError, iter_fields

COMMUNITY_DESCRIPTION = 25     # ApplicationMetadataMessage.Type
MAX_NAME = 200                 # a longer "name" is not shown (status-go limits display names far below this)


class CommunityDescriptionError(StatusError):
    code = "community-description-undecodable"


def _string(b: bytes) -> str:
    return b.decode("utf-8")


def _chat_name(chat: bytes) -> str | None:
    for num, wire, value in iter_fields(chat):
        if num == 3 and wire == 2:                       # CommunityChat.identity
            for n2, w2, v2 in iter_fields(value):
                if n2 == 4 and w2 == 2:                  # ChatIdentity.display_name
                    return _string(v2)
    return None


def clock_and_channels(description: bytes) -> tuple[int, dict[str, str]]:
    """(clock, {channel UUID: display name}) of a serialized CommunityDescription. Raises
    CommunityDescriptionError."""
    clock, names = 0, {}
    try:
        for num, wire, value in iter_fields(bytes(description)):
            if num == 1 and wire == 0:
                clock = value
            elif num == 6 and wire == 2:                 # map entry: key = 1 (UUID), value = 2 (CommunityChat)
                key, chat = None, b""
                for n2, w2, v2 in iter_fields(value):
                    if n2 == 1 and w2 == 2:
                        key = _string(v2)
                    elif n2 == 2 and w2 == 2:
                        chat = v2
                name = _chat_name(chat) if chat else None
                if key and name and len(name) <= MAX_NAME and name.isprintable():
                    names[key] = name
    except (DecodeError, UnicodeDecodeError) as e:
        raise CommunityDescriptionError(f"not a community description: {e}") from None
    return clock, names


def channel_chat_names(description: bytes, community_id: str) -> dict[str, str]:
    """{chat ID: channel name} for the channels of a CommunityDescription. Raises CommunityDescriptionError."""
    return chat_names(community_id, clock_and_channels(description)[1])


def chat_names(community_id: str, channels: dict[str, str]) -> dict[str, str]:
    """{channel UUID: name} -> {chat ID: name}: a channel's chat ID is its community's ID followed by its UUID."""
    return {community_id.lower() + uuid: name for uuid, name in channels.items()}


def signed_description(raw: bytes, community_id: str) -> tuple[int, dict[str, str]] | None:
    """(clock, {channel UUID: display name}) of a stored ProtocolMessage that is a CommunityDescription signed by the
    community's own key; None for another type, an unsigned one or another signer (a forgery names nothing). The one
    check of the History view's channel names and the export's. Raises StatusError or ValueError on bytes that do
    not decode."""
    from coincurve import PublicKey
    from core.status.application_metadata import open_protocol_payload
    msg = open_protocol_payload(raw)
    if msg.type != COMMUNITY_DESCRIPTION or msg.signer is None:
        return None
    if "0x" + PublicKey(msg.signer).format(compressed=True).hex() != community_id.lower():
        return None
    return clock_and_channels(msg.payload)
