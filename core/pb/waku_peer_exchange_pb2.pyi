from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PeerInfo(_message.Message):
    __slots__ = ("enr",)
    ENR_FIELD_NUMBER: _ClassVar[int]
    enr: bytes
    def __init__(self, enr: _Optional[bytes] = ...) -> None: ...

class PeerExchangeQuery(_message.Message):
    __slots__ = ("num_peers",)
    NUM_PEERS_FIELD_NUMBER: _ClassVar[int]
    num_peers: int
    def __init__(self, num_peers: _Optional[int] = ...) -> None: ...

class PeerExchangeResponse(_message.Message):
    __slots__ = ("peer_infos", "status_code", "status_desc")
    PEER_INFOS_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_DESC_FIELD_NUMBER: _ClassVar[int]
    peer_infos: _containers.RepeatedCompositeFieldContainer[PeerInfo]
    status_code: int
    status_desc: str
    def __init__(self, peer_infos: _Optional[_Iterable[_Union[PeerInfo, _Mapping]]] = ..., status_code: _Optional[int] = ..., status_desc: _Optional[str] = ...) -> None: ...

class PeerExchangeRPC(_message.Message):
    __slots__ = ("query", "response")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    query: PeerExchangeQuery
    response: PeerExchangeResponse
    def __init__(self, query: _Optional[_Union[PeerExchangeQuery, _Mapping]] = ..., response: _Optional[_Union[PeerExchangeResponse, _Mapping]] = ...) -> None: ...
