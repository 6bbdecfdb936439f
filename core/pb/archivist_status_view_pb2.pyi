from . import status_application_metadata_pb2 as _status_application_metadata_pb2
from . import status_chat_message_pb2 as _status_chat_message_pb2
from . import status_protocol_message_pb2 as _status_protocol_message_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApplicationChatView(_message.Message):
    __slots__ = ("signature", "payload", "type")
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    signature: bytes
    payload: _containers.RepeatedCompositeFieldContainer[_status_chat_message_pb2.ChatMessage]
    type: _status_application_metadata_pb2.ApplicationMetadataMessage.Type
    def __init__(self, signature: _Optional[bytes] = ..., payload: _Optional[_Iterable[_Union[_status_chat_message_pb2.ChatMessage, _Mapping]]] = ..., type: _Optional[_Union[_status_application_metadata_pb2.ApplicationMetadataMessage.Type, str]] = ...) -> None: ...

class ProtocolChatView(_message.Message):
    __slots__ = ("installation_id", "bundles", "encrypted_message", "public_message")
    class EncryptedMessageEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _status_protocol_message_pb2.EncryptedMessageProtocol
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_status_protocol_message_pb2.EncryptedMessageProtocol, _Mapping]] = ...) -> None: ...
    INSTALLATION_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    installation_id: str
    bundles: _containers.RepeatedCompositeFieldContainer[_status_protocol_message_pb2.Bundle]
    encrypted_message: _containers.MessageMap[str, _status_protocol_message_pb2.EncryptedMessageProtocol]
    public_message: _containers.RepeatedCompositeFieldContainer[ApplicationChatView]
    def __init__(self, installation_id: _Optional[str] = ..., bundles: _Optional[_Iterable[_Union[_status_protocol_message_pb2.Bundle, _Mapping]]] = ..., encrypted_message: _Optional[_Mapping[str, _status_protocol_message_pb2.EncryptedMessageProtocol]] = ..., public_message: _Optional[_Iterable[_Union[ApplicationChatView, _Mapping]]] = ...) -> None: ...

class EncryptedProbe(_message.Message):
    __slots__ = ("encrypted_message",)
    class EncryptedMessageEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _status_protocol_message_pb2.EncryptedMessageProtocol
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_status_protocol_message_pb2.EncryptedMessageProtocol, _Mapping]] = ...) -> None: ...
    ENCRYPTED_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    encrypted_message: _containers.MessageMap[str, _status_protocol_message_pb2.EncryptedMessageProtocol]
    def __init__(self, encrypted_message: _Optional[_Mapping[str, _status_protocol_message_pb2.EncryptedMessageProtocol]] = ...) -> None: ...
