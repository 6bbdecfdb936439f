from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Shard(_message.Message):
    __slots__ = ("cluster", "index")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    cluster: int
    index: int
    def __init__(self, cluster: _Optional[int] = ..., index: _Optional[int] = ...) -> None: ...

class Community(_message.Message):
    __slots__ = ("display_name", "description", "members_count", "color", "tag_indices")
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_COUNT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    TAG_INDICES_FIELD_NUMBER: _ClassVar[int]
    display_name: str
    description: str
    members_count: int
    color: str
    tag_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, display_name: _Optional[str] = ..., description: _Optional[str] = ..., members_count: _Optional[int] = ..., color: _Optional[str] = ..., tag_indices: _Optional[_Iterable[int]] = ...) -> None: ...

class Channel(_message.Message):
    __slots__ = ("display_name", "description", "emoji", "color", "community", "uuid")
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    COMMUNITY_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    display_name: str
    description: str
    emoji: str
    color: str
    community: Community
    uuid: str
    def __init__(self, display_name: _Optional[str] = ..., description: _Optional[str] = ..., emoji: _Optional[str] = ..., color: _Optional[str] = ..., community: _Optional[_Union[Community, _Mapping]] = ..., uuid: _Optional[str] = ...) -> None: ...

class URLData(_message.Message):
    __slots__ = ("content", "shard")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    content: bytes
    shard: Shard
    def __init__(self, content: _Optional[bytes] = ..., shard: _Optional[_Union[Shard, _Mapping]] = ...) -> None: ...
