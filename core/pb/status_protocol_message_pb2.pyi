from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SignedPreKey(_message.Message):
    __slots__ = ("signed_pre_key", "version", "protocol_version")
    SIGNED_PRE_KEY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    signed_pre_key: bytes
    version: int
    protocol_version: int
    def __init__(self, signed_pre_key: _Optional[bytes] = ..., version: _Optional[int] = ..., protocol_version: _Optional[int] = ...) -> None: ...

class Bundle(_message.Message):
    __slots__ = ("identity", "signed_pre_keys", "signature", "timestamp")
    class SignedPreKeysEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SignedPreKey
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SignedPreKey, _Mapping]] = ...) -> None: ...
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    SIGNED_PRE_KEYS_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    identity: bytes
    signed_pre_keys: _containers.MessageMap[str, SignedPreKey]
    signature: bytes
    timestamp: int
    def __init__(self, identity: _Optional[bytes] = ..., signed_pre_keys: _Optional[_Mapping[str, SignedPreKey]] = ..., signature: _Optional[bytes] = ..., timestamp: _Optional[int] = ...) -> None: ...

class DRHeader(_message.Message):
    __slots__ = ("key", "n", "pn", "id")
    KEY_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    PN_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    n: int
    pn: int
    id: bytes
    def __init__(self, key: _Optional[bytes] = ..., n: _Optional[int] = ..., pn: _Optional[int] = ..., id: _Optional[bytes] = ...) -> None: ...

class DHHeader(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    def __init__(self, key: _Optional[bytes] = ...) -> None: ...

class X3DHHeader(_message.Message):
    __slots__ = ("key", "id")
    KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    id: bytes
    def __init__(self, key: _Optional[bytes] = ..., id: _Optional[bytes] = ...) -> None: ...

class HRHeader(_message.Message):
    __slots__ = ("deprecated_key_id", "seq_no", "group_id", "key_id", "keys")
    DEPRECATED_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_NO_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    deprecated_key_id: int
    seq_no: int
    group_id: bytes
    key_id: bytes
    keys: HRKeys
    def __init__(self, deprecated_key_id: _Optional[int] = ..., seq_no: _Optional[int] = ..., group_id: _Optional[bytes] = ..., key_id: _Optional[bytes] = ..., keys: _Optional[_Union[HRKeys, _Mapping]] = ...) -> None: ...

class RekeyGroup(_message.Message):
    __slots__ = ("timestamp", "keys")
    class KeysEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: bytes
        def __init__(self, key: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    timestamp: int
    keys: _containers.ScalarMap[int, bytes]
    def __init__(self, timestamp: _Optional[int] = ..., keys: _Optional[_Mapping[int, bytes]] = ...) -> None: ...

class HRKeys(_message.Message):
    __slots__ = ("keys", "rekey_group")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    REKEY_GROUP_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[HRKey]
    rekey_group: RekeyGroup
    def __init__(self, keys: _Optional[_Iterable[_Union[HRKey, _Mapping]]] = ..., rekey_group: _Optional[_Union[RekeyGroup, _Mapping]] = ...) -> None: ...

class HRKey(_message.Message):
    __slots__ = ("deprecated_key_id", "key", "timestamp")
    DEPRECATED_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    deprecated_key_id: int
    key: bytes
    timestamp: int
    def __init__(self, deprecated_key_id: _Optional[int] = ..., key: _Optional[bytes] = ..., timestamp: _Optional[int] = ...) -> None: ...

class EncryptedMessageProtocol(_message.Message):
    __slots__ = ("X3DH_header", "DR_header", "DH_header", "HR_header", "payload")
    X3DH_HEADER_FIELD_NUMBER: _ClassVar[int]
    DR_HEADER_FIELD_NUMBER: _ClassVar[int]
    DH_HEADER_FIELD_NUMBER: _ClassVar[int]
    HR_HEADER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    X3DH_header: X3DHHeader
    DR_header: DRHeader
    DH_header: DHHeader
    HR_header: HRHeader
    payload: bytes
    def __init__(self, X3DH_header: _Optional[_Union[X3DHHeader, _Mapping]] = ..., DR_header: _Optional[_Union[DRHeader, _Mapping]] = ..., DH_header: _Optional[_Union[DHHeader, _Mapping]] = ..., HR_header: _Optional[_Union[HRHeader, _Mapping]] = ..., payload: _Optional[bytes] = ...) -> None: ...

class ProtocolMessage(_message.Message):
    __slots__ = ("installation_id", "bundles", "encrypted_message", "public_message")
    class EncryptedMessageEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: EncryptedMessageProtocol
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[EncryptedMessageProtocol, _Mapping]] = ...) -> None: ...
    INSTALLATION_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    installation_id: str
    bundles: _containers.RepeatedCompositeFieldContainer[Bundle]
    encrypted_message: _containers.MessageMap[str, EncryptedMessageProtocol]
    public_message: bytes
    def __init__(self, installation_id: _Optional[str] = ..., bundles: _Optional[_Iterable[_Union[Bundle, _Mapping]]] = ..., encrypted_message: _Optional[_Mapping[str, EncryptedMessageProtocol]] = ..., public_message: _Optional[bytes] = ...) -> None: ...
