"""Encode and decode archives and the index exactly as status-go does (WIRE-FORMAT.md sections 1-2)."""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Iterable, Mapping, NamedTuple, Sequence

from Crypto.Hash import keccak
from google.protobuf.message import DecodeError as _PbDecodeError

from core.archive.constants import PIECE_LENGTH
from core.archive.errors import DecodeError
from core.pb import archivist_archive_shape_pb2 as shape_pb
from core.pb import archivist_index_entries_pb2 as index_entries_pb
from core.pb import communities_archive_pb2 as pb
from core.storage.archive_message import ArchiveMessage  # noqa: F401 - the archive's message type

# Limits on what a decoder of outside bytes materialises (far above anything status-go writes: a 30 MB archive of
# Status messages, each with a 65-byte sig, holds < 462k messages; a community has tens of channels).
MAX_ARCHIVE_MESSAGES = 1_000_000
MAX_TOPICS = 65_536
OTHER_FIELDS = 16   # top-level fields of an archive besides its messages: version, metadata, and room for new ones
# An index's entries, BitTorrent or Codex: ~5,000 years of weekly archives (`make bench` decodes a 200k-entry index).
# Unbounded, a 16 MiB index of empty entries took 25.7 CPU-s and 1.5 GB (an index file may be 64 MiB).
MAX_INDEX_ENTRIES = 262_144
_PB_ERRORS = (_PbDecodeError, RuntimeError, ValueError, OverflowError)


def _keccak256_public(data: bytes) -> bytes:
    return keccak.new(data=data, digest_bits=256).digest()


def _oneshot_keccak():
    """pycryptodome's one-call Keccak (what its SHA3_256.digest uses, called through cffi directly): ~5x faster
    than keccak.new() per call, which matters when checking the IDs of a 200k-entry index. Self-tested here;
    anything unexpected falls back to the public API. Returns (keccak256, entry_ids) or None."""
    try:
        from Crypto.Hash.keccak import _raw_keccak_lib
        from Crypto.Util import _raw_api
        fn, ffi = _raw_keccak_lib.keccak_oneshot, _raw_api.ffi
        if _raw_api.backend != "cffi":
            return None
    except (ImportError, AttributeError):
        return None
    ctype, buffer = ffi.typeof("uint8_t[32]"), ffi.buffer
    new = getattr(getattr(ffi, "_backend", None), "newp", None) or ffi.new   # newp skips a Python-level wrapper

    def k(data: bytes) -> bytes:
        if type(data) is not bytes:
            data = bytes(data)
        out = new(ctype, None)
        if fn(data, len(data), out, 32, 64, 24, 0x01):   # capacity 64 bytes, 24 rounds, Keccak padding 0x01
            return _keccak256_public(data)
        return buffer(out)[:]

    def ids(encoded: list[bytes]) -> list[str | None]:
        out = new(ctype, None)          # this call's own output buffer (cffi releases the GIL while hashing)
        digest, public = buffer(out), _keccak256_public
        return ["0x" + (public(e) if fn(e, len(e), out, 32, 64, 24, 0x01) else digest[:]).hex()
                if e[:1] == b"\x12" and len(e) > 2 and e[1] < 0x80 and e[2] != 0x08 else None for e in encoded]
    try:
        if any(k(x) != _keccak256_public(x) for x in (b"", b"abc", bytes(range(256)) * 3)):
            return None
        if ids([b"\x12\x00", b"\x12\x02\x10\x01", b"\x12\x02\x08\x01"]) != [
                None, "0x" + _keccak256_public(b"\x12\x02\x10\x01").hex(), None]:
            return None
    except Exception:  # noqa: BLE001 - any surprise in a private API: use the public one
        return None
    return k, ids


def _entry_ids_public(encoded: list[bytes]) -> list[str | None]:
    return [("0x" + _keccak256_public(e).hex()) if e[:1] == b"\x12" and len(e) > 2 and e[1] < 0x80 and e[2] != 0x08
            else None for e in encoded]


_first = itemgetter(0)
# _entry_ids(encoded): the archive ID of each entry's serialized bytes (unknown fields dropped) when those bytes are
# what IndexEntry.encode() writes: they start with metadata (field 2: the entry's version is unset) whose first byte
# is not field 1 (metadata.version, which IndexEntry does not keep); else None (then computed from the fields when
# asked for). One call for the whole index: per-entry calls cost more than the hashing.
keccak256, _entry_ids = _oneshot_keccak() or (_keccak256_public, _entry_ids_public)


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
    # The ID, computed once (decode_index computes it from the parsed bytes when they are encode()'s: checking a
    # 200k-entry index then rebuilds no protobuf). Not compared; not copied by dataclasses.replace (init=False):
    # a changed entry gets its own ID.
    _id: str | None = field(default=None, init=False, repr=False, compare=False)

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
        aid = self._id
        if aid is None:
            aid = "0x" + keccak256(self.encode()).hex()
            object.__setattr__(self, "_id", aid)
        return aid

    def __reduce__(self):
        """Pickle and copy the fields only (the cached ID is recomputed when needed)."""
        return IndexEntry, (self.start, self.end, self.topics, self.offset, self.size, self.padding, self.version)

    @classmethod
    def from_pb(cls, m: pb.WakuMessageArchiveIndexMetadata) -> "IndexEntry":
        md = m.metadata
        return cls(getattr(md, "from"), md.to, tuple(md.contentTopic), m.offset, m.size, m.padding, m.version)


@dataclass(slots=True, eq=False, repr=False)
class _IndexEntryBuilder:
    """IndexEntry's slots without frozen=True: decode_index builds each entry as this, then sets its class to
    IndexEntry (same slot layout). A frozen dataclass's __init__ sets each field through object.__setattr__: 5x
    slower, 0.25 s of a 200k-entry index. The result is an ordinary, frozen IndexEntry."""

    start: int
    end: int
    topics: tuple[bytes, ...]
    offset: int
    size: int
    padding: int
    version: int
    _id: str | None


if _IndexEntryBuilder.__slots__ != IndexEntry.__slots__:
    raise RuntimeError("decode_index's builder must mirror IndexEntry's slots")


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


def count_top_fields(raw: bytes, limit: int, field: int = 3) -> tuple[int, int]:
    """(matching, fields): the top-level fields numbered `field` (an archive's messages, 3; an index's entries, 1)
    and all top-level fields, counted without decoding, stopping once there are more matching than `limit` or more
    fields than `limit + OTHER_FIELDS`. An archive's top level is its version, its metadata and its messages (an
    index's, its entries); without the second bound, 64 MiB of tiny other fields kept this Python loop going for
    ~43 CPU-s. Only reached when the bytes hold more tag bytes than `limit` (the cheap upper bound: 0x1a for field
    3, 0x0a for field 1); malformed framing stops the count and is left to the protobuf parser to report."""
    from core.varint import DecodeError as VarintError, next_field
    matching = fields = pos = 0
    most = limit + OTHER_FIELDS
    while pos < len(raw) and matching <= limit and fields <= most:
        try:
            number, _, pos = next_field(raw, pos)
        except VarintError:
            break
        fields += 1
        matching += number == field
    return matching, fields


def refuse_too_many_entries(raw: bytes, code: str) -> None:
    """Raise DecodeError(code) when an index (BitTorrent's or Codex's: both a map in field 1) lists more than
    MAX_INDEX_ENTRIES entries, or has more top-level fields than that, before protobuf builds any of them."""
    if raw.count(b"\x0a") > MAX_INDEX_ENTRIES:       # each entry starts with 0x0a: else there cannot be too many
        entries, fields = count_top_fields(raw, MAX_INDEX_ENTRIES, field=1)
        if entries > MAX_INDEX_ENTRIES or fields > MAX_INDEX_ENTRIES + OTHER_FIELDS:
            raise DecodeError(f"index lists more than {MAX_INDEX_ENTRIES} archives (not a real index)", code=code)


def _metadata_topics_over_limit(raw: bytes) -> bool:
    """Whether the archive's metadata lists more than MAX_TOPICS topics, counted in the metadata's own bytes
    (proto/archivist_archive_shape.proto: every metadata field, as protobuf merges them; the messages are not
    parsed) before upb builds them: 64 MiB of empty topics took it ~1 CPU-s and 1.2 GB. The 0x22 bytes (a topic's
    tag) bound the count; only past MAX_TOPICS of them are the fields walked."""
    from core.varint import DecodeError as VarintError, next_field
    if len(raw) <= 2 * MAX_TOPICS:                   # a topic takes 2 bytes at least: there cannot be too many
        return False
    shape = shape_pb.ArchiveShape()
    try:
        shape.ParseFromString(raw)
    except _PB_ERRORS:
        return False                                 # the archive's own parse says what is wrong
    if sum(md.count(b"\x22") for md in shape.metadata) <= MAX_TOPICS:
        return False
    topics = 0
    for md in shape.metadata:
        pos = 0
        while pos < len(md):
            try:
                number, wire, pos = next_field(md, pos)
            except VarintError:
                break
            topics += number == 4 and wire == 2
            if topics > MAX_TOPICS:
                return True
    return False


def parse_archive_pb(raw: bytes, *, archive_id: str | None = None) -> pb.WakuMessageArchive:
    """Parse a WakuMessageArchive from outside, refusing absurd shapes before they are materialised."""
    raw = bytes(raw)
    limit = MAX_ARCHIVE_MESSAGES
    if raw.count(b"\x1a") > limit:                   # each message starts with 0x1a: else there cannot be too many
        messages, fields = count_top_fields(raw, limit)
        if messages > limit:
            raise DecodeError(f"archive holds more than {MAX_ARCHIVE_MESSAGES} messages (not a real archive)",
                              code="archive-too-many-messages", archive_id=archive_id)
        if fields > limit + OTHER_FIELDS:
            raise DecodeError(f"archive has more than {limit + OTHER_FIELDS} top-level fields (not a real archive)",
                              code="archive-undecodable", archive_id=archive_id)
    if _metadata_topics_over_limit(raw):
        raise DecodeError(f"archive lists more than {MAX_TOPICS} topics (not a real archive)",
                          code="archive-undecodable", archive_id=archive_id)
    arch = pb.WakuMessageArchive()
    try:
        arch.ParseFromString(raw)
    except _PB_ERRORS as e:
        raise DecodeError(f"archive does not decode as WakuMessageArchive: {e}", code="archive-undecodable",
                          archive_id=archive_id) from None
    if not arch.HasField("metadata"):
        raise DecodeError("archive has no metadata (not a WakuMessageArchive, or encrypted)",
                          code="archive-undecodable", archive_id=archive_id)
    return arch


def decode_archive(raw: bytes, *, archive_id: str | None = None) -> DecodedArchive:
    """Decode a WakuMessageArchive (without its padding). Raises DecodeError with a reason."""
    arch = parse_archive_pb(raw, archive_id=archive_id)
    md = arch.metadata
    return DecodedArchive(getattr(md, "from"), md.to, tuple(md.contentTopic),
                          [ArchiveMessage.from_pb(m) for m in arch.messages], arch.version)


def encode_index(entries: Mapping[str, IndexEntry]) -> bytes:
    """Encode the index map with entries sorted by key (status-go's map order is random; ours is stable)."""
    idx = pb.WakuMessageArchiveIndex()
    for key in sorted(entries):
        idx.archives[key].CopyFrom(entries[key].to_pb())
    return idx.SerializeToString(deterministic=True)


# The index read as the list of its map entries (proto/archivist_index_entries.proto: the same bytes as the map):
# upb parses them in a sixth of the time (no hash table of 200k keys) and iterating them needs no key lookups.
# A key written twice keeps its last entry, as the map does (tests/unit/archive/test_index_decode.py compares both
# decoders on valid, mutated and random bytes).
_IndexEntries = index_entries_pb.IndexEntries


class _MapEntry(NamedTuple):
    key: str
    value: pb.WakuMessageArchiveIndexMetadata


def _map_entries(raw: bytes) -> list[_MapEntry]:
    """The index read as the map status-go declares. Used when the bytes are not the canonical encoding of a list
    of entries (unknown fields, a field of the wrong wire type, a field repeated...): upb's map parsing has its own
    rules for such entries (it drops an entry with a malformed value), and the map's reading is the one that
    counts. Found by tests/unit/archive/test_index_decode.py's mutated indexes."""
    idx = pb.WakuMessageArchiveIndex()
    try:
        idx.ParseFromString(bytes(raw))
    except _PB_ERRORS as e:
        raise DecodeError(f"index does not decode as WakuMessageArchiveIndex: {e}", code="index-undecodable") from None
    if raw and not idx.archives:
        raise DecodeError("index is not empty but holds no archives (encrypted, or not an index)",
                          code="index-undecodable")
    idx.DiscardUnknownFields()
    archives = idx.archives
    return [_MapEntry(k, archives[k]) for k in archives]


def decode_index(raw: bytes) -> dict[str, IndexEntry]:
    """Decode an index file into {archive_id: entry}, in data order. Raises DecodeError; does not check
    invariants (index_check.check_entries does). Each entry's archive ID is computed here from the parsed bytes
    (unknown fields dropped, as status-go's ID never covers them), not by rebuilding a protobuf per entry."""
    raw = bytes(raw)
    refuse_too_many_entries(raw, "index-too-big")
    idx = _IndexEntries()
    try:
        idx.ParseFromString(raw)
    except _PB_ERRORS as e:
        raise DecodeError(f"index does not decode as WakuMessageArchiveIndex: {e}", code="index-undecodable") from None
    archives = idx.archives
    if raw and not archives:
        raise DecodeError("index is not empty but holds no archives (encrypted, or not an index)",
                          code="index-undecodable")
    idx.DiscardUnknownFields()
    if idx.ByteSize() != len(raw):
        archives = _map_entries(raw)
    keys: list[str] = []
    fields: list[tuple] = []
    encoded: list[bytes] = []
    topic_sets: dict[tuple[bytes, ...], tuple[bytes, ...]] = {}   # one tuple per distinct topic list
    one_topic_set = topic_sets.setdefault
    for a in archives:
        v = a.value
        md = v.metadata
        ct = md.contentTopic
        n = len(ct)
        if n == 1:
            topics = (ct[0],)
        elif n > MAX_TOPICS:
            raise DecodeError(f"index entry {a.key[:80]!r} lists {n} topics, over {MAX_TOPICS}",
                              code="index-undecodable")
        else:
            topics = tuple(ct)
        keys.append(a.key)
        fields.append((getattr(md, "from"), md.to, one_topic_set(topics, topics), v.offset, v.size, v.padding,
                       v.version))
        encoded.append(v.SerializeToString())   # deterministic=True changes only map order (none here), costs 2x
    ids = _entry_ids(encoded)
    del encoded
    twin, entry = _IndexEntryBuilder, IndexEntry
    n, offsets = len(keys), [f[3] for f in fields]
    if len(set(keys)) == n and len(set(offsets)) == n:
        # The usual index: no key twice, no two archives at one offset, so data order is offset order, found by
        # one sort of positions (float keys: see sorted_entries) before any entry is made.
        if n and max(offsets) < 1 << 53:
            offsets = list(map(float, offsets))
        out: dict[str, IndexEntry] = {}
        for i in sorted(range(n), key=offsets.__getitem__):
            e = twin(*fields[i], ids[i])
            e.__class__ = entry
            out[keys[i]] = e
        return out
    out = {}
    for k, f, aid in zip(keys, fields, ids):
        e = twin(*f, aid)
        e.__class__ = entry
        out[k] = e          # a key written twice: its last entry, as in a protobuf map
    return dict(sorted_entries(out))   # in data order: every later sorted_entries() is then a linear check


def sorted_entries(entries: Mapping[str, IndexEntry]) -> list[tuple[str, IndexEntry]]:
    """Entries in `data` order: by offset, then by key. Two stable sorts, both with C-level keys: by key, then the
    positions by offset (as floats when every offset is exact in one: CPython compares floats much faster than
    large ints); 2x faster for 200k entries than one sort by (offset, key) tuples, same order. Entries already in
    that order (decode_index returns them so) cost one linear pass."""
    items = list(entries.items())
    last_offset, last_key = -1, ""
    for k, e in items:
        o = e.offset
        if o < last_offset or (o == last_offset and k <= last_key):
            break
        last_offset, last_key = o, k
    else:
        return items
    items.sort(key=_first)
    offsets = [e.offset for _, e in items]
    if -(1 << 53) < min(offsets) and max(offsets) < 1 << 53:
        offsets = list(map(float, offsets))
    return [items[i] for i in sorted(range(len(items)), key=offsets.__getitem__)]


# -- bulk encoding helpers (core.archive.columnar): the same bytes as encode_archive, in pieces -------------------

def archive_header(start: int, end: int, topics: Sequence[bytes]) -> bytes:
    """What encode_archive writes before the messages: field 2 (metadata), length-prefixed. An archive is this
    followed by frame_message() of each message, in order (version 0 is not written)."""
    from core.varint import write_varint
    md = metadata_pb(start, end, topics).SerializeToString(deterministic=True)
    return b"\x12" + write_varint(len(md)) + md


def frame_message(m: ArchiveMessage) -> bytes:
    """One `messages` element (field 3) of an archive, encoded by the protobuf library."""
    from core.varint import write_varint
    raw = m.to_pb().SerializeToString(deterministic=True)
    return b"\x1a" + write_varint(len(raw)) + raw
