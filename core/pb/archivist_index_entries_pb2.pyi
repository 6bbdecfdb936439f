from . import communities_archive_pb2 as _communities_archive_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class IndexEntries(_message.Message):
    __slots__ = ("archives",)
    class Entry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _communities_archive_pb2.WakuMessageArchiveIndexMetadata
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_communities_archive_pb2.WakuMessageArchiveIndexMetadata, _Mapping]] = ...) -> None: ...
    ARCHIVES_FIELD_NUMBER: _ClassVar[int]
    archives: _containers.RepeatedCompositeFieldContainer[IndexEntries.Entry]
    def __init__(self, archives: _Optional[_Iterable[_Union[IndexEntries.Entry, _Mapping]]] = ...) -> None: ...
