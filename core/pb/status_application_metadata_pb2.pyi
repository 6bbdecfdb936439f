from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApplicationMetadataMessage(_message.Message):
    __slots__ = ("signature", "payload", "type")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[ApplicationMetadataMessage.Type]
        CHAT_MESSAGE: _ClassVar[ApplicationMetadataMessage.Type]
        COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK: _ClassVar[ApplicationMetadataMessage.Type]
    UNKNOWN: ApplicationMetadataMessage.Type
    CHAT_MESSAGE: ApplicationMetadataMessage.Type
    COMMUNITY_MESSAGE_ARCHIVE_MAGNETLINK: ApplicationMetadataMessage.Type
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    signature: bytes
    payload: bytes
    type: ApplicationMetadataMessage.Type
    def __init__(self, signature: _Optional[bytes] = ..., payload: _Optional[bytes] = ..., type: _Optional[_Union[ApplicationMetadataMessage.Type, str]] = ...) -> None: ...
