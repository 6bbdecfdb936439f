import pytest

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.errors import DecodeError
from core.archive.partition import chunk_messages, partitions


@pytest.mark.parametrize("raw,size,padding", [
    (1, 102400, 102399),
    (102399, 102400, 1),
    (102400, 102400, 0),
    (102401, 204800, 102399),
    (204800, 307200, 102400),     # status-go's quirk: an exact multiple above one piece gets a whole extra piece
    (204805, 307200, 102395),
])
def test_padding_table(raw, size, padding):
    assert codec.padded_size(raw) == (size, padding)


def test_index_sorted_and_round_trip():
    t = b"\x00\x01\x02\x03"
    entries = {}
    off = 0
    for i in range(5):
        e = IndexEntry(1000 + i * 10, 1010 + i * 10, (t,), off, 102400, 100 + i)
        entries[e.archive_id] = e
        off += 102400
    raw = codec.encode_index(entries)
    assert codec.decode_index(raw) == entries
    # map entries are written sorted by key: the same archives always give the same bytes
    assert codec.encode_index(dict(reversed(list(entries.items())))) == raw
    keys_in_order = [k for k in sorted(entries)]
    positions = [raw.index(k.encode()) for k in keys_in_order]
    assert positions == sorted(positions)


def test_decode_errors_are_clear():
    with pytest.raises(DecodeError) as e:
        codec.decode_index(b"\xff\xff\xff")
    assert e.value.code == "index-undecodable"
    with pytest.raises(DecodeError) as e:
        codec.decode_archive(b"\x0a\x05abc")
    assert e.value.code == "archive-undecodable"
    with pytest.raises(DecodeError):
        codec.decode_archive(b"")  # no metadata


def test_partitions_not_calendar_aligned_and_last_ends_now():
    w = 7 * 86400
    assert partitions(100, 100 + 2 * w + 5) == [(100, 100 + w), (100 + w, 100 + 2 * w), (100 + 2 * w, 100 + 2 * w + 5)]
    assert partitions(5, 5) == []


def _m(ts, payload_len, sig_len=65):
    return ArchiveMessage(b"s" * sig_len, ts, b"tttt", b"p" * payload_len, b"", ts.to_bytes(32, "big"))


def test_chunking_cap_and_oversize_drop():
    msgs = [_m(1, 35), _m(2, 35), _m(3, 35), _m(4, 200), _m(5, 10)]
    chunks = list(chunk_messages(msgs, cap=200))  # sizes 100, 100, 100, 265 (dropped), 75
    assert [[m.timestamp for m in c] for c in chunks] == [[1, 2], [3, 5]]
