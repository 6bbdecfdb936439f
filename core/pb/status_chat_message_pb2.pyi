from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN_MESSAGE_TYPE: _ClassVar[MessageType]
    ONE_TO_ONE: _ClassVar[MessageType]
    PUBLIC_GROUP: _ClassVar[MessageType]
    PRIVATE_GROUP: _ClassVar[MessageType]
    SYSTEM_MESSAGE_PRIVATE_GROUP: _ClassVar[MessageType]
    COMMUNITY_CHAT: _ClassVar[MessageType]
UNKNOWN_MESSAGE_TYPE: MessageType
ONE_TO_ONE: MessageType
PUBLIC_GROUP: MessageType
PRIVATE_GROUP: MessageType
SYSTEM_MESSAGE_PRIVATE_GROUP: MessageType
COMMUNITY_CHAT: MessageType

class ChatMessage(_message.Message):
    __slots__ = ("clock", "timestamp", "text", "response_to", "ens_name", "chat_id", "message_type", "content_type", "display_name")
    class ContentType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_CONTENT_TYPE: _ClassVar[ChatMessage.ContentType]
        TEXT_PLAIN: _ClassVar[ChatMessage.ContentType]
        STICKER: _ClassVar[ChatMessage.ContentType]
        STATUS: _ClassVar[ChatMessage.ContentType]
        EMOJI: _ClassVar[ChatMessage.ContentType]
        TRANSACTION_COMMAND: _ClassVar[ChatMessage.ContentType]
        SYSTEM_MESSAGE_CONTENT_PRIVATE_GROUP: _ClassVar[ChatMessage.ContentType]
        IMAGE: _ClassVar[ChatMessage.ContentType]
        AUDIO: _ClassVar[ChatMessage.ContentType]
        COMMUNITY: _ClassVar[ChatMessage.ContentType]
        SYSTEM_MESSAGE_GAP: _ClassVar[ChatMessage.ContentType]
        CONTACT_REQUEST: _ClassVar[ChatMessage.ContentType]
        DISCORD_MESSAGE: _ClassVar[ChatMessage.ContentType]
        IDENTITY_VERIFICATION: _ClassVar[ChatMessage.ContentType]
        SYSTEM_MESSAGE_PINNED_MESSAGE: _ClassVar[ChatMessage.ContentType]
    UNKNOWN_CONTENT_TYPE: ChatMessage.ContentType
    TEXT_PLAIN: ChatMessage.ContentType
    STICKER: ChatMessage.ContentType
    STATUS: ChatMessage.ContentType
    EMOJI: ChatMessage.ContentType
    TRANSACTION_COMMAND: ChatMessage.ContentType
    SYSTEM_MESSAGE_CONTENT_PRIVATE_GROUP: ChatMessage.ContentType
    IMAGE: ChatMessage.ContentType
    AUDIO: ChatMessage.ContentType
    COMMUNITY: ChatMessage.ContentType
    SYSTEM_MESSAGE_GAP: ChatMessage.ContentType
    CONTACT_REQUEST: ChatMessage.ContentType
    DISCORD_MESSAGE: ChatMessage.ContentType
    IDENTITY_VERIFICATION: ChatMessage.ContentType
    SYSTEM_MESSAGE_PINNED_MESSAGE: ChatMessage.ContentType
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TO_FIELD_NUMBER: _ClassVar[int]
    ENS_NAME_FIELD_NUMBER: _ClassVar[int]
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    clock: int
    timestamp: int
    text: str
    response_to: str
    ens_name: str
    chat_id: str
    message_type: MessageType
    content_type: ChatMessage.ContentType
    display_name: str
    def __init__(self, clock: _Optional[int] = ..., timestamp: _Optional[int] = ..., text: _Optional[str] = ..., response_to: _Optional[str] = ..., ens_name: _Optional[str] = ..., chat_id: _Optional[str] = ..., message_type: _Optional[_Union[MessageType, str]] = ..., content_type: _Optional[_Union[ChatMessage.ContentType, str]] = ..., display_name: _Optional[str] = ...) -> None: ...
