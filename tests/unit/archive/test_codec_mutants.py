"""The archive codec (core/archive/codec.py): Keccak vectors, every field of an entry, status-go's padding quirk,
the limits on outside bytes and their sentences, and the index decoder's ordering, pinned against the survivors
of `make mutation` (docs/QUALITY.md). Expected bytes are written by hand from the .proto field numbers
(WakuMessageArchiveIndexMetadata: version 1, metadata 2, offset 3, size 4, padding 5; metadata: version 1,
from 2, to 3, contentTopic 4), and Keccak values are the published test vectors."""
from __future__ import annotations

import copy
import pickle

import pytest

from core.archive import codec
from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import DecodeError
from core.pb import communities_archive_pb2 as pb
from core.storage.archive_message import ArchiveMessage

EMPTY = bytes.fromhex("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
ABC = bytes.fromhex("4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45")
TOPIC = bytes.fromhex("00eb85a7")


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def ld(field: int, b: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(b)) + b


def vi(field: int, n: int) -> bytes:
    return varint(field << 3) + varint(n)


def meta_bytes(start, end, topics, version=0) -> bytes:
    return (vi(1, version) if version else b"") + vi(2, start) + vi(3, end) + b"".join(ld(4, t) for t in topics)


def entry_bytes(start, end, topics, offset, size, padding, version=0, md_version=0) -> bytes:
    return ((vi(1, version) if version else b"") + ld(2, meta_bytes(start, end, topics, md_version)) +
            (vi(3, offset) if offset else b"") + vi(4, size) + (vi(5, padding) if padding else b""))


def index_bytes(pairs) -> bytes:
    return b"".join(ld(1, ld(1, k.encode()) + ld(2, v)) for k, v in pairs)


@pytest.mark.parametrize("fn", [codec.keccak256, codec._keccak256_public])
def test_keccak_vectors(fn):
    assert fn(b"") == EMPTY and fn(b"abc") == ABC
    assert fn(bytearray(b"abc")) == ABC and fn(memoryview(b"abc")) == ABC


def test_the_fast_keccak_passes_its_self_test_here():
    fast = codec._oneshot_keccak()
    assert fast is not None
    k, ids = fast
    assert k(b"abc") == ABC and k(bytearray(b"abc")) == ABC and k(memoryview(b"")) == EMPTY
    assert k(bytes(range(256)) * 3) == codec._keccak256_public(bytes(range(256)) * 3)
    assert codec.keccak256 is not codec._keccak256_public      # this machine uses the fast path


ID_CASES = [
    (b"", None), (b"\x12", None), (b"\x12\x00", None),            # too short
    (b"\x0a\x02\x10\x01", None),                                   # not metadata first
    (b"\x12\x02\x08\x01", None),                                   # metadata.version first: IDs drop it
    (b"\x12\x02\x10\x01", "hash"), (b"\x12\x7f\x10" + bytes(126), "hash"), (b"\x12\x01\x10", "hash"),
    (b"\x12\x80\x01\x10" + bytes(127), None),                     # 2-byte length: not read here
    (b"\x12\x02\x10\x01\x18\x05", "hash"),
]


@pytest.mark.parametrize("ids", [lambda e: codec._entry_ids(e), lambda e: codec._oneshot_keccak()[1](e),
                                 lambda e: codec._entry_ids_public(e)])
def test_entry_id_rule(ids):
    got = ids([raw for raw, _ in ID_CASES])
    want = [("0x" + codec._keccak256_public(raw).hex()) if w else None for raw, w in ID_CASES]
    assert got == want


def test_entry_properties():
    e = IndexEntry(10, 20, (TOPIC,), 3 * PIECE_LENGTH, 2 * PIECE_LENGTH, 500)
    assert e.raw_size == 2 * PIECE_LENGTH - 500
    assert e.first_piece == 3 and e.pieces == range(3, 5)
    e = IndexEntry(10, 20, (TOPIC,), 0, PIECE_LENGTH, 0)
    assert e.first_piece == 0 and e.pieces == range(0, 1)


def test_entry_encoding_is_the_hand_encoding_and_id_its_keccak():
    e = IndexEntry(1_700_000_000, 1_700_604_800, (TOPIC, b"\x01\x02\x03\x04"), 204800, 102400, 77, version=2)
    want = entry_bytes(1_700_000_000, 1_700_604_800, (TOPIC, b"\x01\x02\x03\x04"), 204800, 102400, 77, 2)
    assert e.encode() == want
    assert e.archive_id == "0x" + codec._keccak256_public(want).hex() == codec.archive_id(want)
    assert e._id == e.archive_id                                   # cached
    pbm = e.to_pb()
    assert (pbm.version, getattr(pbm.metadata, "from"), pbm.metadata.to, list(pbm.metadata.contentTopic),
            pbm.offset, pbm.size, pbm.padding) == (2, 1_700_000_000, 1_700_604_800, [TOPIC, b"\x01\x02\x03\x04"],
                                                   204800, 102400, 77)
    assert IndexEntry.from_pb(pbm) == e and IndexEntry.from_pb(pbm).archive_id == e.archive_id


def test_entry_copies_keep_every_field_and_recompute_the_id():
    e = IndexEntry(1, 2, (TOPIC,), PIECE_LENGTH, PIECE_LENGTH, 5, version=3)
    e.archive_id
    for c in (pickle.loads(pickle.dumps(e)), copy.copy(e), copy.deepcopy(e)):
        assert c == e and c.version == 3 and c._id is None and c.archive_id == e.archive_id


def test_metadata_pb():
    md = codec.metadata_pb(5, 6, iter([TOPIC]))
    assert md.SerializeToString() == meta_bytes(5, 6, [TOPIC])


@pytest.mark.parametrize("raw,want", [(1, (PIECE_LENGTH, PIECE_LENGTH - 1)), (PIECE_LENGTH, (PIECE_LENGTH, 0)),
                                      (PIECE_LENGTH + 1, (2 * PIECE_LENGTH, PIECE_LENGTH - 1)),
                                      (2 * PIECE_LENGTH, (3 * PIECE_LENGTH, PIECE_LENGTH)),
                                      (2 * PIECE_LENGTH - 1, (2 * PIECE_LENGTH, 1))])
def test_padded_size_with_status_go_quirk(raw, want):
    assert codec.padded_size(raw) == want


def msg(i: int, ts: int = 1_700_000_001) -> ArchiveMessage:
    return ArchiveMessage(b"s" * 65, ts, TOPIC, b"p%d" % i, b"", bytes([i]) * 32)


def test_encode_archive_and_pieces_agree():
    msgs = [msg(i) for i in range(3)]
    raw = codec.encode_archive(10, 20, [TOPIC], iter(msgs))
    assert raw == codec.archive_header(10, 20, [TOPIC]) + b"".join(codec.frame_message(m) for m in msgs)
    assert raw.startswith(ld(2, meta_bytes(10, 20, [TOPIC])))
    assert codec.frame_message(msgs[0]) == ld(3, msgs[0].to_pb().SerializeToString())
    d = codec.decode_archive(bytearray(raw))
    assert (d.start, d.end, d.topics, d.messages, d.version) == (10, 20, (TOPIC,), msgs, 0)


def test_decode_archive_keeps_the_version():
    raw = vi(1, 4) + ld(2, meta_bytes(1, 2, [])) + ld(3, msg(1).to_pb().SerializeToString())
    assert codec.decode_archive(raw).version == 4


def test_count_fields():
    m = ld(3, b"x")
    assert codec.count_top_fields(m * 5, 10) == (5, 5)
    assert codec.count_top_fields(ld(2, b"\x1a\x1a") + m * 3, 10) == (3, 4)   # only top-level field 3 is a message
    assert codec.count_top_fields(m * 5, 2) == (3, 3)                      # stops just past the limit
    assert codec.count_top_fields(m * 2 + b"\x1a\x09short", 10) == (3, 3)  # the last one's length is not checked
    assert codec.count_top_fields(m * 2 + b"\x0f", 10) == (2, 2)           # a bad tag stops the count
    assert codec.count_top_fields(b"", 10) == (0, 0)
    other = 2 + codec.OTHER_FIELDS                                       # limit + OTHER_FIELDS = 18 fields at most
    assert codec.count_top_fields(vi(1, 1) * 40, 2) == (0, other + 1)      # ... then it stops, past the bound
    assert codec.count_top_fields(vi(1, 1) * other + m * 40, 2) == (1, other + 1)
    assert codec.count_top_fields(vi(1, 1) * (other - 3) + m * 40, 2) == (3, other)   # messages past the limit first
    assert codec.count_top_fields(b"\x0d" + bytes(4) + b"\x09" + bytes(8) + m, 10) == (1, 3)   # 32- and 64-bit fields


def test_count_fields_of_another_number():
    e = ld(1, b"entry")
    assert codec.count_top_fields(e * 4 + ld(3, b"x"), 10, field=1) == (4, 5)
    assert codec.count_top_fields(e * 4, 2, field=1) == (3, 3)


@pytest.mark.parametrize("decode,code", [(codec.decode_index, "index-too-big"), ("codex", "index-too-large")])
def test_an_index_with_too_many_entries_is_refused_before_parsing(monkeypatch, decode, code):
    """BitTorrent's and Codex's index alike (both a map in field 1): at most MAX_INDEX_ENTRIES entries, and as many
    top-level fields plus OTHER_FIELDS; empty entries are counted too (protobuf would build each one)."""
    if decode == "codex":
        from core.codex.index import decode_index as decode
    monkeypatch.setattr(codec, "MAX_INDEX_ENTRIES", 3)
    with pytest.raises(DecodeError) as e:
        decode(ld(1, b"") * 4)
    assert str(e.value) == "index lists more than 3 archives (not a real index)" and e.value.code == code
    with pytest.raises(DecodeError) as e:                    # other fields: more than 3 + OTHER_FIELDS in all
        decode(ld(1, b"") + vi(2, 10) * (3 + codec.OTHER_FIELDS))
    assert e.value.code == code
    assert len(decode(ld(1, b"") * 3)) == 1                  # at the bound: parsed (one map key, "", thrice)
    # walked (more 0x0a bytes than the bound), and exactly at each bound: parsed, not refused as too many
    assert len(decode(ld(1, b"") * 3 + vi(2, 10) * codec.OTHER_FIELDS)) == 1          # 3 + OTHER_FIELDS fields
    with pytest.raises(DecodeError) as e:
        decode(ld(1, b"\x0a\x0a") * 3)                      # 3 entries (9 bytes 0x0a), each a broken key
    assert e.value.code == "index-undecodable"


def test_field_bomb_is_refused_at_the_bound(monkeypatch):
    """Megabytes of tiny fields that are not messages: refused once there are more than any archive has, without
    walking the rest (the walk is Python; before the bound, 64 MiB of them took about a minute per decode)."""
    monkeypatch.setattr(codec, "MAX_ARCHIVE_MESSAGES", 3)
    head = ld(2, meta_bytes(1, 2, [])) + ld(3, b"")
    most = 3 + codec.OTHER_FIELDS
    ok = head + vi(1, 0x1a) * (most - 2)                   # exactly the bound: parsed (the version field repeats)
    assert len(codec.parse_archive_pb(ok).messages) == 1
    with pytest.raises(DecodeError) as e:
        codec.parse_archive_pb(ok + vi(1, 0x1a), archive_id="0xcd")
    assert str(e.value) == f"archive has more than {most} top-level fields (not a real archive)"
    assert e.value.code == "archive-undecodable" and e.value.archive_id == "0xcd"
    # the same fields without a 0x1a byte cannot hold too many messages: not walked, parsed by protobuf alone
    assert codec.parse_archive_pb(head + vi(1, 7) * 100).version == 7


def test_message_count_limit(monkeypatch):
    monkeypatch.setattr(codec, "MAX_ARCHIVE_MESSAGES", 3)
    head = ld(2, meta_bytes(1, 2, []))
    assert len(codec.parse_archive_pb(head + ld(3, b"") * 3).messages) == 3
    # exactly the limit, with one more 0x1a byte (in a topic): counted, and still accepted
    assert len(codec.parse_archive_pb(ld(2, meta_bytes(1, 2, [b"\x1a"])) + ld(3, b"") * 3).messages) == 3
    with pytest.raises(DecodeError) as e:
        codec.parse_archive_pb(head + ld(3, b"") * 4, archive_id="0xab")
    assert str(e.value) == "archive holds more than 3 messages (not a real archive)"
    assert e.value.code == "archive-too-many-messages" and e.value.archive_id == "0xab"
    # many 0x1a bytes that are not messages: counted, then parsed normally
    assert codec.parse_archive_pb(ld(2, meta_bytes(1, 2, [b"\x1a" * 10])) + ld(3, b"")).messages[0] is not None


@pytest.mark.parametrize("decode", [codec.parse_archive_pb, codec.decode_archive])
def test_undecodable_archive_message(decode):
    with pytest.raises(DecodeError) as e:
        decode(b"\x12\x09short", archive_id="0x1")
    assert str(e.value).startswith("archive does not decode as WakuMessageArchive: ")
    assert e.value.code == "archive-undecodable" and e.value.archive_id == "0x1" and e.value.__suppress_context__


def test_archive_without_metadata():
    with pytest.raises(DecodeError) as e:
        codec.parse_archive_pb(ld(3, b""), archive_id="0x2")
    assert str(e.value) == "archive has no metadata (not a WakuMessageArchive, or encrypted)"
    assert e.value.code == "archive-undecodable" and e.value.archive_id == "0x2"
    assert codec.parse_archive_pb(ld(2, b"")).metadata.to == 0      # an empty metadata is metadata


def test_topic_limit_of_an_archive(monkeypatch):
    monkeypatch.setattr(codec, "MAX_TOPICS", 2)
    assert len(codec.parse_archive_pb(ld(2, meta_bytes(1, 2, [b"a", b"b"]))).metadata.contentTopic) == 2
    with pytest.raises(DecodeError) as e:
        codec.parse_archive_pb(ld(2, meta_bytes(1, 2, [b"a", b"b", b"c"])), archive_id="0x3")
    assert str(e.value) == "archive lists more than 2 topics (not a real archive)"
    assert e.value.code == "archive-undecodable" and e.value.archive_id == "0x3"


def test_topics_are_counted_before_the_parse_as_protobuf_counts_them(monkeypatch):
    """The topic limit is checked in the metadata's own bytes (a topic bomb is refused before upb builds it); the
    count is protobuf's: metadata fields given twice merge, a topic's own 0x22 bytes are not topics, and a field 4
    that is not length-delimited is no topic (an unknown field to protobuf)."""
    monkeypatch.setattr(codec, "MAX_TOPICS", 2)

    def topics(raw):
        return len(codec.parse_archive_pb(raw).metadata.contentTopic)
    assert topics(ld(2, meta_bytes(1, 2, [b"a"])) + ld(2, meta_bytes(1, 2, [b"b"]))) == 2
    with pytest.raises(DecodeError, match=r"^archive lists more than 2 topics \(not a real archive\)$"):
        codec.parse_archive_pb(ld(2, meta_bytes(1, 2, [b"a", b"b"])) + ld(2, meta_bytes(1, 2, [b"c"])))
    assert topics(ld(2, meta_bytes(1, 2, [b"\x22\x22\x22", b"\x22"]))) == 2
    with pytest.raises(DecodeError, match="^archive does not decode as WakuMessageArchive"):   # not "topics"
        codec.parse_archive_pb(ld(2, meta_bytes(1, 2, [b"a"])) + b"\x12\x09short")
    assert topics(ld(2, meta_bytes(1, 2, [b"a", b"b"]) + vi(4, 34) * 3)) == 2


def test_the_real_topic_limit_at_its_edge():
    """65,536 empty topics (131 KB) are an archive; one more is refused, though 131 KB is a small archive."""
    head = vi(2, 1) + vi(3, 2)
    assert len(codec.parse_archive_pb(ld(2, head + b"\x22\x00" * codec.MAX_TOPICS)).metadata.contentTopic) == 65_536
    with pytest.raises(DecodeError, match="more than 65536 topics"):
        codec.parse_archive_pb(ld(2, head + b"\x22\x00" * (codec.MAX_TOPICS + 1)))


def test_limits():
    assert (codec.MAX_ARCHIVE_MESSAGES, codec.MAX_TOPICS) == (1_000_000, 65_536)


def test_encode_index_sorts_keys_and_is_the_hand_encoding():
    a = IndexEntry(1, 2, (TOPIC,), PIECE_LENGTH, PIECE_LENGTH, 5)
    b = IndexEntry(1, 2, (TOPIC,), 0, PIECE_LENGTH, 6)
    raw = codec.encode_index({"0xbb": a, "0xaa": b})
    assert raw == index_bytes([("0xaa", b.encode()), ("0xbb", a.encode())])


@pytest.mark.parametrize("decode, empty", [(codec.decode_index, {}), (codec._map_entries, [])],
                         ids=["decode_index", "_map_entries"])
def test_index_errors(decode, empty):
    with pytest.raises(DecodeError) as e:
        decode(b"\x0a\x09short")
    assert str(e.value).startswith("index does not decode as WakuMessageArchiveIndex: ")
    assert e.value.code == "index-undecodable" and e.value.__suppress_context__
    with pytest.raises(DecodeError) as e:
        decode(b"\x10\x01")                               # a valid protobuf without archives
    assert str(e.value) == "index is not empty but holds no archives (encrypted, or not an index)"
    assert e.value.code == "index-undecodable"
    assert decode(b"") == empty


def test_map_entries_drop_unknown_fields_and_keep_the_last_of_a_key():
    v1, v2 = entry_bytes(1, 2, [TOPIC], 0, PIECE_LENGTH, 1), entry_bytes(3, 4, [TOPIC], 0, PIECE_LENGTH, 2)
    got = codec._map_entries(index_bytes([("k", v1), ("k", v2 + vi(15, 9))]))
    assert [(m.key, m.value.SerializeToString()) for m in got] == [("k", v2)]


def test_decode_index_fields_ids_and_unknown_fields():
    v = entry_bytes(10, 20, [TOPIC, b"abcd"], PIECE_LENGTH, 2 * PIECE_LENGTH, 99, version=1)
    got = codec.decode_index(index_bytes([("0xkey", v + vi(9, 1))]))     # unknown field 9: not in the ID
    e = got["0xkey"]
    assert type(e) is IndexEntry
    assert (e.start, e.end, e.topics, e.offset, e.size, e.padding, e.version) == (
        10, 20, (TOPIC, b"abcd"), PIECE_LENGTH, 2 * PIECE_LENGTH, 99, 1)
    assert e.archive_id == "0x" + codec._keccak256_public(v).hex() == e._id


def test_metadata_version_is_not_part_of_the_id():
    v = entry_bytes(10, 20, [TOPIC], 0, PIECE_LENGTH, 9, md_version=3)
    e = codec.decode_index(index_bytes([("k", v)]))["k"]
    assert e.archive_id == "0x" + codec._keccak256_public(entry_bytes(10, 20, [TOPIC], 0, PIECE_LENGTH, 9)).hex()


def test_one_topic_tuple_per_distinct_list():
    pairs = [(f"k{i}", entry_bytes(i, i + 1, [TOPIC, b"x"], i * PIECE_LENGTH, PIECE_LENGTH, 1)) for i in range(3)]
    got = list(codec.decode_index(index_bytes(pairs)).values())
    assert got[0].topics == (TOPIC, b"x") and got[0].topics is got[1].topics is got[2].topics
    one = codec.decode_index(index_bytes([("k", entry_bytes(1, 2, [TOPIC], 0, PIECE_LENGTH, 1))]))["k"]
    assert one.topics == (TOPIC,) and type(one.topics) is tuple
    none = codec.decode_index(index_bytes([("k", entry_bytes(1, 2, [], 0, PIECE_LENGTH, 1))]))["k"]
    assert none.topics == ()


def test_index_topic_limit(monkeypatch):
    monkeypatch.setattr(codec, "MAX_TOPICS", 2)
    ok = index_bytes([("k", entry_bytes(1, 2, [b"a", b"b"], 0, PIECE_LENGTH, 1))])
    assert codec.decode_index(ok)["k"].topics == (b"a", b"b")
    key = "K" * 100
    with pytest.raises(DecodeError) as e:
        codec.decode_index(index_bytes([(key, entry_bytes(1, 2, [b"a", b"b", b"c"], 0, PIECE_LENGTH, 1))]))
    assert str(e.value) == f"index entry {'K' * 80!r} lists 3 topics, over 2" and e.value.code == "index-undecodable"


def test_decode_index_returns_data_order():
    pairs = [("0xc", entry_bytes(1, 2, [], 2 * PIECE_LENGTH, PIECE_LENGTH, 1)),
             ("0xa", entry_bytes(1, 2, [], 0, PIECE_LENGTH, 1)),
             ("0xb", entry_bytes(1, 2, [], PIECE_LENGTH, PIECE_LENGTH, 1))]
    assert list(codec.decode_index(index_bytes(pairs))) == ["0xa", "0xb", "0xc"]


def test_decode_index_orders_by_offset_not_size():
    pairs = [("0xaa", entry_bytes(1, 2, [], 2 * PIECE_LENGTH, PIECE_LENGTH, 1)),    # key order and size order: aa
             ("0xbb", entry_bytes(1, 2, [], 0, 2 * PIECE_LENGTH, 1))]
    assert list(codec.decode_index(index_bytes(pairs))) == ["0xbb", "0xaa"]


def test_decode_index_repeated_key_at_distinct_offsets_keeps_the_last_written():
    # no zero field written (proto3 drops them on re-encoding, and a longer input takes the slow path instead)
    v = [entry_bytes(i, i + 1, [], o, PIECE_LENGTH, 1) for i, o in zip([1, 2, 3], [0, PIECE_LENGTH, 2 * PIECE_LENGTH])]
    raw = index_bytes([("0xb", v[1]), ("0xb", v[0]), ("0xa", v[2])])
    assert pb.WakuMessageArchiveIndex.FromString(raw).ByteSize() < len(raw)      # a map would drop the twin ...
    assert codec._IndexEntries.FromString(raw).ByteSize() == len(raw)             # ... the decoder's list keeps it
    assert [(k, e.start) for k, e in codec.decode_index(raw).items()] == [("0xb", 1), ("0xa", 3)]


def test_decode_index_with_a_repeated_key_or_offset():
    v = [entry_bytes(i, i + 1, [], o, PIECE_LENGTH, 1) for i, o in enumerate([PIECE_LENGTH, 0, 0])]
    got = codec.decode_index(index_bytes([("0xb", v[0]), ("0xb", v[1]), ("0xa", v[2])]))
    assert [(k, e.start) for k, e in got.items()] == [("0xa", 2), ("0xb", 1)]     # last of a key; offset, then key
    assert all(type(e) is IndexEntry and e._id for e in got.values())
    got = codec.decode_index(index_bytes([("0xd", v[1]), ("0xc", v[2])]))          # same offset, two keys
    assert list(got) == ["0xc", "0xd"] and got["0xd"].archive_id == "0x" + codec._keccak256_public(v[1]).hex()


def test_decode_index_offsets_beyond_float_precision():
    big = 1 << 53
    pairs = [("0xa", entry_bytes(1, 2, [], big + 1, PIECE_LENGTH, 1)), ("0xb", entry_bytes(1, 2, [], big, PIECE_LENGTH, 1))]
    assert list(codec.decode_index(index_bytes(pairs))) == ["0xb", "0xa"]
    pairs = [("0xa", entry_bytes(1, 2, [], big, PIECE_LENGTH, 1)), ("0xb", entry_bytes(1, 2, [], big - 1, PIECE_LENGTH, 1))]
    assert list(codec.decode_index(index_bytes(pairs))) == ["0xb", "0xa"]


def E(offset: int) -> IndexEntry:
    return IndexEntry(1, 2, (), offset, PIECE_LENGTH, 1)


def test_sorted_entries():
    assert codec.sorted_entries({}) == []
    ordered = {"b": E(0), "a": E(PIECE_LENGTH)}
    assert codec.sorted_entries(ordered) == list(ordered.items())
    assert [k for k, _ in codec.sorted_entries({"b": E(5), "a": E(5), "c": E(0)})] == ["c", "a", "b"]
    assert [k for k, _ in codec.sorted_entries({"a": E(5), "b": E(5)})] == ["a", "b"]
    assert [k for k, _ in codec.sorted_entries({"b": E(5), "a": E(0)})] == ["a", "b"]
    assert [k for k, _ in codec.sorted_entries({"a": E(0), "c": E(9), "b": E(3)})] == ["a", "b", "c"]
    assert [k for k, _ in codec.sorted_entries({"a": E(-3), "b": E(-5)})] == ["b", "a"]


@pytest.mark.parametrize("offsets,want", [((1 << 53) + 1, 1 << 53), (-(1 << 53), -(1 << 53) - 1),
                                          ((1 << 54) + 2, (1 << 54) + 1)])
def test_sorted_entries_beyond_float_precision(offsets, want):
    # two offsets that one float cannot tell apart, keys in the opposite order
    got = codec.sorted_entries({"a": E(offsets), "b": E(want)})
    assert [k for k, _ in got] == ["b", "a"]
