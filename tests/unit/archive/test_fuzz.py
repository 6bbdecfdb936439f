"""The decoders' own guards (the broad fuzzing of every decoder is tests/fuzz): limits refused before anything is
materialised, cached IDs equal to fresh encodings, the fast paths equal to the plain ones."""
import dataclasses
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.errors import ArchiveError
from core.archive.index_check import plan_reads
from core.archive.verify import verify_folder
from core.pb import communities_archive_pb2 as pb

TOPIC = b"\x00\xeb\x85\xa7"


def archive_of(n: int, payload: bytes = b"p") -> bytes:
    msgs = [ArchiveMessage(b"\x01", 100 + i, TOPIC, payload, b"", bytes(32)) for i in range(n)]
    return codec.encode_archive(100, 200, [TOPIC], msgs)


def test_too_many_messages_refused_exactly_at_the_limit(monkeypatch):
    monkeypatch.setattr(codec, "MAX_ARCHIVE_MESSAGES", 10)
    assert len(codec.decode_archive(archive_of(10)).messages) == 10
    with pytest.raises(ArchiveError) as e:
        codec.decode_archive(archive_of(11))
    assert e.value.code == "archive-too-many-messages"
    # many 0x1a bytes inside payloads are not messages: the exact count decides, not the cheap bound
    assert len(codec.decode_archive(archive_of(3, b"\x1a" * 50)).messages) == 3


def test_message_bomb_is_refused_without_decoding():
    raw = codec.encode_archive(1, 2, [TOPIC], []) + b"\x1a\x00" * (codec.MAX_ARCHIVE_MESSAGES + 1)
    with pytest.raises(ArchiveError) as e:
        codec.decode_archive(raw)
    assert e.value.code == "archive-too-many-messages"


def test_topic_bombs_are_refused(monkeypatch):
    monkeypatch.setattr(codec, "MAX_TOPICS", 4)
    e = IndexEntry(1, 2, (TOPIC,) * 5, 0, 102400, 100)
    with pytest.raises(ArchiveError) as err:
        codec.decode_index(codec.encode_index({e.archive_id: e}))
    assert err.value.code == "index-undecodable" and "topics" in str(err.value)
    with pytest.raises(ArchiveError):
        codec.decode_archive(codec.encode_archive(1, 2, [TOPIC] * 5, []))


def _with(entry: IndexEntry, extra: bytes = b"", metadata_version: int = 0, drop_metadata: bool = False) -> bytes:
    v = entry.to_pb()
    if metadata_version:
        v.metadata.version = metadata_version
    if drop_metadata:
        v.ClearField("metadata")
    idx = pb.WakuMessageArchiveIndex()
    idx.archives["k"].ParseFromString(v.SerializeToString() + extra)
    return idx.SerializeToString()


@pytest.mark.parametrize("kw", [{}, {"extra": b"\x78\x05"}, {"metadata_version": 3}, {"drop_metadata": True}],
                         ids=["plain", "unknown-field", "metadata-version", "no-metadata"])
@pytest.mark.parametrize("version", [0, 1])
def test_cached_id_is_the_id_of_a_fresh_encoding(kw, version):
    e = IndexEntry(1577836800, 1578355200, (TOPIC,), 204800, 102400, 102328, version)
    got = codec.decode_index(_with(e, **kw))["k"]
    assert got.archive_id == dataclasses.replace(got).archive_id == IndexEntry(
        got.start, got.end, got.topics, got.offset, got.size, got.padding, got.version).archive_id


def test_decoded_index_is_in_data_order_and_equal():
    es = {}
    for i in range(20):
        e = IndexEntry(i, i + 1, (TOPIC,), (19 - i) * 102400, 102400, 1)
        es[e.archive_id] = e
    back = codec.decode_index(codec.encode_index(es))
    assert back == es
    assert [e.offset for e in back.values()] == sorted(e.offset for e in es.values())


def test_fast_keccak_equals_the_public_api():
    rng = random.Random(3)
    for n in (0, 1, 31, 135, 136, 137, 1000, 70_000):
        data = rng.randbytes(n)
        want = codec._keccak256_public(data)
        assert codec.keccak256(data) == codec.keccak256(bytearray(data)) == codec.keccak256(memoryview(data)) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 5, 102400, 2**53 - 1, 2**53, 2**53 + 1, 2**64 - 1]),
                          st.text("0x1af", max_size=4)), max_size=30))
def test_sorted_entries_is_offset_then_key(pairs):
    es = {k: IndexEntry(1, 2, (), off, 102400, 0) for off, k in pairs}
    assert codec.sorted_entries(es) == sorted(es.items(), key=lambda kv: (kv[1].offset, kv[0]))
    again = dict(codec.sorted_entries(es))
    assert codec.sorted_entries(again) == codec.sorted_entries(es)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 4), st.integers(0, 3)), max_size=25),
       st.integers(0, 12))
def test_plan_reads_reads_each_byte_at_most_once_and_inside_data(spec, pieces):
    es = {}
    for i, (off, size, pad) in enumerate(spec):
        e = IndexEntry(i, i + 1, (), off * 51200, size * 102400, pad * 102400)
        es[e.archive_id] = e
    data_len = pieces * 102400
    covered = []
    for aid, e, skip in plan_reads(es, data_len):
        if skip is None:
            assert e.padding <= e.size and e.offset + e.size <= data_len
            covered.append((e.offset, e.offset + e.size))
    covered.sort()
    assert all(a[1] <= b[0] for a, b in zip(covered, covered[1:]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.binary(max_size=250_000))
def test_verifier_on_random_folder(index, data):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "index").write_bytes(index)
        (Path(d) / "data").write_bytes(data)
        rep = verify_folder(d, discover=True)
        assert rep.findings and all(f.code and f.message for f in rep.findings)
        assert rep.torrent is None and "pieces-unchecked" in {f.code for f in rep.findings}


def test_decoded_entries_pickle_and_copy_as_plain_entries():
    import copy
    import pickle
    e = IndexEntry(1, 2, (TOPIC,), 0, 102400, 100, 3)
    got = next(iter(codec.decode_index(codec.encode_index({e.archive_id: e})).values()))
    for back in (pickle.loads(pickle.dumps(got)), copy.deepcopy(got), copy.copy(got)):
        assert back == e and back.archive_id == e.archive_id and back.version == 3


_pieces = st.lists(st.one_of(
    st.binary(max_size=4).map(lambda t: b"\x22" + bytes([len(t)]) + t),      # a topic (field 4, length-delimited)
    st.integers(0, 127).map(lambda n: b"\x20" + bytes([n])),                 # field 4 as a varint: unknown
    st.integers(0, 127).map(lambda n: b"\x10" + bytes([n])),                 # from
    st.just(b"\x22\x02\x22\x22")), max_size=8)                               # a topic made of 0x22 bytes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_pieces, min_size=1, max_size=3), st.integers(0, 6))
def test_the_topic_count_before_the_parse_is_protobufs(monkeypatch, metadatas, limit):
    """codec._metadata_topics_over_limit (read before protobuf builds anything) against the topics protobuf's own
    parse gives, for archives of one to three metadata fields (protobuf merges them)."""
    monkeypatch.setattr(codec, "MAX_TOPICS", limit)
    raw = b"".join(b"\x12" + bytes([len(b"".join(md))]) + b"".join(md) for md in metadatas)
    arch = pb.WakuMessageArchive()
    arch.ParseFromString(raw)
    assert codec._metadata_topics_over_limit(raw) == (len(arch.metadata.contentTopic) > limit)
