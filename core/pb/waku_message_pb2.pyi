from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RateLimitProof(_message.Message):
    __slots__ = ("proof", "merkle_root", "epoch", "share_x", "share_y", "nullifier", "rln_identifier")
    PROOF_FIELD_NUMBER: _ClassVar[int]
    MERKLE_ROOT_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    SHARE_X_FIELD_NUMBER: _ClassVar[int]
    SHARE_Y_FIELD_NUMBER: _ClassVar[int]
    NULLIFIER_FIELD_NUMBER: _ClassVar[int]
    RLN_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    proof: bytes
    merkle_root: bytes
    epoch: bytes
    share_x: bytes
    share_y: bytes
    nullifier: bytes
    rln_identifier: bytes
    def __init__(self, proof: _Optional[bytes] = ..., merkle_root: _Optional[bytes] = ..., epoch: _Optional[bytes] = ..., share_x: _Optional[bytes] = ..., share_y: _Optional[bytes] = ..., nullifier: _Optional[bytes] = ..., rln_identifier: _Optional[bytes] = ...) -> None: ...

class WakuMessage(_message.Message):
    __slots__ = ("payload", "content_topic", "version", "timestamp", "meta", "rate_limit_proof", "ephemeral")
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TOPIC_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_PROOF_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    payload: bytes
    content_topic: str
    version: int
    timestamp: int
    meta: bytes
    rate_limit_proof: RateLimitProof
    ephemeral: bool
    def __init__(self, payload: _Optional[bytes] = ..., content_topic: _Optional[str] = ..., version: _Optional[int] = ..., timestamp: _Optional[int] = ..., meta: _Optional[bytes] = ..., rate_limit_proof: _Optional[_Union[RateLimitProof, _Mapping]] = ..., ephemeral: bool = ...) -> None: ...
