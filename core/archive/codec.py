"""Encode and decode archives and the index exactly as status-go does (WIRE-FORMAT.md sections 1-2)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from Crypto.Hash import keccak
from google.protobuf.message import DecodeError as _PbDecodeError

from core.archive.constants import PIECE_LENGTH
from core.archive.errors import DecodeError
from core.pb import communities_archive_pb2 as pb


def keccak256(data: bytes) -> bytes:
    return keccak.new(data=data, digest_bits=256).digest()


@dataclass(frozen=True, slots=True)
class ArchiveMessage:
    """status-go's archived WakuMessage (timestamp in seconds, 4-byte topic, decrypted payload)."""

    sig: bytes
    timestamp: int
    topic: bytes
    payload: bytes
    padding: bytes = b""
    hash: bytes = b""
    third_party_id: str = ""

    @property
    def chunk_size(self) -> int:
        """What status-go counts against the 30 MB cap."""
        return len(self.payload) + len(self.sig)

    def to_pb(self) -> pb.WakuMessage:
        return pb.WakuMessage(sig=self.sig, timestamp=self.timestamp, topic=self.topic, payload=self.payload,
                              padding=self.padding, hash=self.hash, thirdPartyId=self.third_party_id)

    @classmethod
    def from_pb(cls, m: pb.WakuMessage) -> "ArchiveMessage":
        return cls(m.sig, m.timestamp, m.topic, m.payload, m.padding, m.hash, m.thirdPartyId)


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One WakuMessageArchiveIndexMetadata: where an archive sits in `data`."""

    start: int            # metadata.from (seconds)
    end: int              # metadata.to (seconds)
    topics: tuple[bytes, ...]
    offset: int
    size: int             # bytes in `data`, padding included
    padding: int
    version: int = 0

    @property
    def raw_size(self) -> int:
        return self.size - self.padding

    @property
    def first_piece(self) -> int:
        return self.offset // PIECE_LENGTH

    @property
    def pieces(self) -> range:
        """Pieces of the torrent holding this archive (exact, because sizes are piece multiples)."""
        return range(self.offset // PIECE_LENGTH, (self.offset + self.size) // PIECE_LENGTH)

    def to_pb(self) -> pb.WakuMessageArchiveIndexMetadata:
        return pb.WakuMessageArchiveIndexMetadata(
            version=self.version, metadata=metadata_pb(self.start, self.end, self.topics),
            offset=self.offset, size=self.size, padding=self.padding)

    def encode(self) -> bytes:
        return self.to_pb().SerializeToString(deterministic=True)

    @property
    def archive_id(self) -> str:
        return archive_id(self.encode())

    @classmethod
    def from_pb(cls, m: pb.WakuMessageArchiveIndexMetadata) -> "IndexEntry":
        return cls(m.metadata.__getattribute__("from"), m.metadata.to, tuple(m.metadata.contentTopic),
                   m.offset, m.size, m.padding, m.version)


@dataclass(slots=True)
class DecodedArchive:
    start: int
    end: int
    topics: tuple[bytes, ...]
    messages: list[ArchiveMessage] = field(default_factory=list)
    version: int = 0


def metadata_pb(start: int, end: int, topics: Iterable[bytes]) -> pb.WakuMessageArchiveMetadata:
    md = pb.WakuMessageArchiveMetadata(to=end, contentTopic=list(topics))
    setattr(md, "from", start)  # `from` is a Python keyword
    return md


def padded_size(raw: int) -> tuple[int, int]:
    """(size, padding) for an encoded archive of `raw` bytes, status-go's quirk included:
    a raw size that is an exact multiple of the piece length above one piece still gets a whole extra piece."""
    if raw > PIECE_LENGTH:
        size = raw + PIECE_LENGTH - raw % PIECE_LENGTH
    else:
        size = PIECE_LENGTH
    return size, size - raw


def archive_id(encoded_entry: bytes) -> str:
    return "0x" + keccak256(encoded_entry).hex()


def encode_archive(start: int, end: int, topics: Sequence[bytes], messages: Iterable[ArchiveMessage]) -> bytes:
    """Encode one WakuMessageArchive (unpadded); `messages` must already be in archive order."""
    arch = pb.WakuMessageArchive(metadata=metadata_pb(start, end, topics))
    arch.messages.extend(m.to_pb() for m in messages)
    return arch.SerializeToString(deterministic=True)


def decode_archive(raw: bytes, *, archive_id: str | None = None) -> DecodedArchive:
    """Decode a WakuMessageArchive (without its padding). Raises DecodeError with a reason."""
    arch = pb.WakuMessageArchive()
    try:
        arch.ParseFromString(bytes(raw))
    except (_PbDecodeError, RuntimeError, ValueError) as e:
        raise DecodeError(f"archive does not decode as WakuMessageArchive: {e}", code="archive-undecodable",
                          archive_id=archive_id) from None
    if not arch.HasField("metadata"):
        raise DecodeError("archive has no metadata (not a WakuMessageArchive, or encrypted)",
                          code="archive-undecodable", archive_id=archive_id)
    md = arch.metadata
    return DecodedArchive(getattr(md, "from"), md.to, tuple(md.contentTopic),
                          [ArchiveMessage.from_pb(m) for m in arch.messages], arch.version)


def encode_index(entries: Mapping[str, IndexEntry]) -> bytes:
    """Encode the index map with entries sorted by key (status-go's map order is random; ours is stable)."""
    idx = pb.WakuMessageArchiveIndex()
    for key in sorted(entries):
        idx.archives[key].CopyFrom(entries[key].to_pb())
    return idx.SerializeToString(deterministic=True)


def decode_index(raw: bytes) -> dict[str, IndexEntry]:
    """Decode an index file into {archive_id: entry}. Raises DecodeError; does not check invariants (see verify)."""
    idx = pb.WakuMessageArchiveIndex()
    try:
        idx.ParseFromString(bytes(raw))
    except (_PbDecodeError, RuntimeError, ValueError) as e:
        raise DecodeError(f"index does not decode as WakuMessageArchiveIndex: {e}", code="index-undecodable") from None
    if raw and not idx.archives:
        raise DecodeError("index is not empty but holds no archives (encrypted, or not an index)",
                          code="index-undecodable")
    return {k: IndexEntry.from_pb(v) for k, v in idx.archives.items()}


def sorted_entries(entries: Mapping[str, IndexEntry]) -> list[tuple[str, IndexEntry]]:
    """Entries in `data` order (by offset)."""
    return sorted(entries.items(), key=lambda kv: (kv[1].offset, kv[0]))
