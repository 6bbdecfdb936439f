"""The build's bulk encoder (core.archive.columnar) makes the protobuf library's bytes: per message, per archive,
and per window read from a real SQLite store (ordering, 30 MB chunking, batch boundaries, odd rows)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.archive import codec, columnar
from core.archive.codec import ArchiveMessage
from core.archive.partition import chunk_messages
from core.storage import waku_messages

U64 = 2**64 - 1
I64 = 2**63 - 1
TOPICS = [b"\x00\xeb\x85\xa7", b"\x12\x34\x56\x78"]
T0 = 1_700_000_000

blob = st.binary(max_size=300)
# payloads of 16,380..16,390 bytes (a length varint's 2-/3-byte boundary is 16,384), repeated from a drawn pattern:
# Hypothesis drawing 16 KB byte by byte took ~80 ms an example, 25 s of this file's time
around_16k = st.builds(lambda n, pattern: (pattern * (n // len(pattern) + 1))[:n], st.integers(16380, 16390),
                       st.binary(min_size=1, max_size=64))
edge_ints = st.sampled_from([0, 1, 127, 128, 16383, 16384, 2**28 - 1, 2**28, 2**35, 2**56, 2**63 - 1, 2**63, U64])
messages = st.builds(
    ArchiveMessage, sig=st.one_of(st.just(b""), st.binary(min_size=65, max_size=65), blob),
    timestamp=st.one_of(edge_ints, st.integers(0, U64)), topic=st.one_of(st.just(b""), st.binary(max_size=8)),
    payload=st.one_of(st.just(b""), blob, around_16k),
    padding=st.one_of(st.just(b""), blob), hash=st.one_of(st.just(b""), st.binary(min_size=32, max_size=32), blob),
    third_party_id=st.one_of(st.just(""), st.text(max_size=40)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, max_size=12))
def test_frames_equal_the_protobuf_library(ms):
    assert columnar.frames(columnar.Columns.from_messages(ms)) == [codec.frame_message(m) for m in ms]
    header = codec.archive_header(T0, T0 + 604_800, TOPICS)
    assert header + b"".join(columnar.frames(columnar.Columns.from_messages(ms))) == \
        codec.encode_archive(T0, T0 + 604_800, TOPICS, ms)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, U64), st.binary(max_size=200), st.binary(min_size=32, max_size=32),
                          st.sampled_from(TOPICS)), max_size=10))
def test_fixed_width_hash_and_topic_columns(rows):
    """The store's shape: hash and topic as n x width matrices are folded into the header pieces."""
    ms = [ArchiveMessage(b"\x04" * 65, ts, topic, payload, b"", h) for ts, payload, h, topic in rows]
    c = columnar.Columns.from_messages(ms)
    n = len(ms)
    c.hash = np.frombuffer(b"".join(m.hash for m in ms), np.uint8).reshape(n, 32)
    c.topic = np.frombuffer(b"".join(m.topic for m in ms), np.uint8).reshape(n, 4)
    assert columnar.frames(c) == [codec.frame_message(m) for m in ms]


def _store(path, ms, extra_sql=()):
    con = waku_messages.connect(path)
    waku_messages.insert_messages(con, ms)
    for sql, args in extra_sql:
        con.execute(sql, args)
    con.commit()
    return con


def _reference(con, lo, hi, cap):
    return [(codec.encode_archive(lo, hi, TOPICS, c), len(c))
            for c in chunk_messages(waku_messages.query_messages(con, TOPICS, lo, hi), cap)]


store_messages = st.lists(st.builds(
    ArchiveMessage, sig=st.one_of(st.binary(min_size=65, max_size=65), st.binary(max_size=70)),
    timestamp=st.one_of(st.integers(T0, T0 + 20), st.sampled_from([0, I64 - 1])),   # many rows share a second
    topic=st.sampled_from(TOPICS), payload=st.one_of(st.just(b""), st.binary(max_size=120)),
    padding=st.one_of(st.just(b""), st.binary(max_size=8)), hash=st.binary(min_size=32, max_size=32),
    third_party_id=st.one_of(st.just(""), st.text(max_size=12))), max_size=40, unique_by=lambda m: m.hash)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(store_messages, st.sampled_from([120, 250, 10_000]), st.sampled_from([1, 3, 4096]))
def test_windows_from_a_store_equal_the_reference_path(tmp_path_factory, monkeypatch, ms, cap, batch):
    """Ties on one timestamp (sorted by hash across batch boundaries), chunk cuts at small caps, messages over
    the cap dropped, huge and zero timestamps, empty payloads, third_party_id: archive for archive the bytes of
    encode_archive over chunk_messages over query_messages."""
    monkeypatch.setattr(columnar, "BATCH_ROWS", batch)
    monkeypatch.setattr(columnar, "BATCH_ROWS_MIN", 1)
    monkeypatch.setattr(columnar, "BATCH_BYTES", 200)
    con = _store(tmp_path_factory.mktemp("s") / "m.sqlite", ms)
    for lo, hi in ((0, I64), (T0 + 5, T0 + 15)):
        assert list(columnar.encode_window(con, TOPICS, lo, hi, cap)) == _reference(con, lo, hi, cap)


def _msgs(k, ts=T0, width=32):
    return [ArchiveMessage(b"\x04" * 65, ts + i % 3, TOPICS[i % 2], bytes([i]) * (i + 1), b"",
                           bytes([i]) * width) for i in range(k)]


@pytest.mark.parametrize("odd", [
    ("UPDATE waku_messages SET timestamp = timestamp + 0.5 WHERE rowid = 4", ()),         # a REAL timestamp
    ("UPDATE waku_messages SET third_party_id = ? WHERE rowid % 2 = 0", ("discord-Ünïcode-42",)),  # bulk path
    ("UPDATE waku_messages SET hash = upper(hash) WHERE rowid % 3 = 0", ()),              # mixed-case hashes
    ("INSERT INTO waku_messages VALUES (?, ?, ?, ?, ?, ?, NULL)",
     (b"s", T0 + 1, "0x" + TOPICS[0].hex(), b"p", b"", "0x" + "ab" * 20)),               # another hash length
])
def test_rows_the_bulk_path_does_not_take_are_read_as_before(tmp_path, odd):
    con = _store(tmp_path / "m.sqlite", _msgs(30), [odd])
    got = list(columnar.encode_window(con, TOPICS, T0, T0 + 10))
    assert got == _reference(con, T0, T0 + 10, 30_000_000) and sum(n for _, n in got) >= 30


def test_a_text_payload_fails_as_the_reference_path_does(tmp_path):
    con = _store(tmp_path / "m.sqlite", _msgs(5),
                 [("UPDATE waku_messages SET payload = 'text' WHERE rowid = 3", ())])
    with pytest.raises(TypeError, match="string argument without an encoding"):
        list(waku_messages.query_messages(con, TOPICS, T0, T0 + 10))
    with pytest.raises(TypeError, match="string argument without an encoding"):
        list(columnar.encode_window(con, TOPICS, T0, T0 + 10))


def test_rows_to_columns_refuses_what_status_go_does_not_write(tmp_path):
    con = _store(tmp_path / "m.sqlite", _msgs(4))
    rows = waku_messages.scan_rows(con, TOPICS, 0, I64).fetchall()
    assert columnar.rows_to_columns(rows, TOPICS) is not None
    for i, bad in ((1, 1.5), (5, "0x12"), (6, b"bytes"), (0, "text"), (1, -1)):
        odd = [rows[0][:i] + (bad,) + rows[0][i + 1:], *rows[1:]]
        assert columnar.rows_to_columns(odd, TOPICS) is None, (i, bad)


def test_chunker_matches_chunk_messages_on_random_sizes():
    rng = np.random.default_rng(7)
    cap = 1000
    sizes = rng.integers(0, 400, 500)
    sizes[[10, 11, 200]] = [cap, 0, cap]
    ms = [ArchiveMessage(b"", 1, b"", b"x" * int(s), b"", i.to_bytes(4, "big")) for i, s in enumerate(sizes)]
    want = [[m.hash for m in c] for c in chunk_messages(ms, cap)]
    chunker, got = columnar.Chunker(cap), []
    for part in np.array_split(np.arange(len(ms)), 7):   # batches of uneven length
        pieces = [m.hash for m in ms[part[0]:part[-1] + 1]]
        enc = columnar.Encoded(pieces, 1, np.zeros(len(pieces), np.int64))
        for parts, count in chunker.feed(columnar.Batch(sizes[part], enc)):
            got.append([h for p in parts for h in p])
    got.append([h for p in chunker.take()[0] for h in p])
    assert got == want
