"""Rebuilding an index from `data` (core/archive/rebuild.py): each refusal's sentence, each boundary (the one-piece
archive without padding, an archive that ends exactly at the end of data) and each field of a rebuilt entry,
pinned against the survivors of `make mutation` (docs/QUALITY.md). Expected sizes come from status-go's padding
rule (WIRE-FORMAT.md section 2): whole pieces of 102400 bytes, a raw size of exactly one piece gets none."""
from __future__ import annotations

import pytest

from core.archive import codec, rebuild
from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.storage.archive_message import ArchiveMessage

TOPIC = bytes.fromhex("00eb85a7")
W0 = 1_700_000_000


def archive(payload_len: int = 10, start: int = W0, n: int = 1) -> bytes:
    msgs = [ArchiveMessage(b"\x04" + bytes(64), start + i, TOPIC, b"p" * payload_len, b"", bytes([i + 1]) * 32)
            for i in range(n)]
    return codec.encode_archive(start, start + 604800, [TOPIC], msgs)


def one_piece_archive(start: int = W0) -> bytes:
    """An encoded archive of exactly PIECE_LENGTH bytes (status-go gives it no padding)."""
    n = PIECE_LENGTH - 200
    while len(a := archive(n, start)) != PIECE_LENGTH:
        n += PIECE_LENGTH - len(a)
    return a


def padded(raw: bytes) -> bytes:
    size = PIECE_LENGTH if len(raw) <= PIECE_LENGTH else len(raw) + PIECE_LENGTH - len(raw) % PIECE_LENGTH
    return raw + bytes(size - len(raw))


def test_raw_end_stops_at_the_first_zero_at_a_field_boundary():
    a = archive()
    assert rebuild.raw_end(padded(a), 0, PIECE_LENGTH) == len(a)
    buf = b"\x01\x02" + padded(a)
    assert rebuild.raw_end(buf, 2, len(buf)) == 2 + len(a)


def test_raw_end_without_padding_is_the_end():
    a = archive()
    assert rebuild.raw_end(a, 0, len(a)) == len(a)        # the last field ends exactly at `end`


def test_not_protobuf_names_the_byte():
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.raw_end(b"\xff\xff" + b"\x08\x01\x0f", 2, 5)
    assert str(e.value) == "byte 4: not protobuf (wire type 7 at byte 4)" and e.value.code == "rebuild-failed"
    assert e.value.__suppress_context__


def test_field_number_zero():
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.raw_end(b"\x08\x01\x80\x00\x01", 0, 5)        # tag 0 written in two bytes
    assert str(e.value) == "byte 2: field number 0 is not protobuf"


def test_runs_past_the_end():
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.raw_end(b"\xaa\x08\x01\x0a\x05abcd", 1, 8)
    assert str(e.value) == "the archive starting at byte 1 runs past the end of data (8 bytes)"
    assert rebuild.raw_end(b"\xaa\x08\x01\x0a\x04abcd", 1, 9) == 9


def test_one_piece_archive_is_followed_directly_by_the_next():
    a, b = one_piece_archive(), archive(start=W0 + 604800)
    buf = a + padded(b)
    assert rebuild.raw_end(buf, 0, len(buf)) == PIECE_LENGTH
    got = rebuild.walk(buf, len(buf))
    first, second = got.values()
    assert (first.offset, first.size, first.padding) == (0, PIECE_LENGTH, 0)
    assert (second.offset, second.size, second.padding) == (PIECE_LENGTH, PIECE_LENGTH, PIECE_LENGTH - len(b))


def test_piece_boundary_rule_applies_only_at_exactly_one_piece():
    def filler(field):                     # one field of exactly one piece: tag, 3-byte length, zeros
        return bytes([field << 3 | 2]) + b"\xfc\x9f\x06" + bytes(PIECE_LENGTH - 4)
    assert len(filler(1)) == PIECE_LENGTH
    # at exactly one piece a lower field number than the last starts the next archive (start 1: from `start`)
    buf = b"\xaa" + filler(2) + b"\x0a\x01x"
    assert rebuild.raw_end(buf, 1, len(buf)) == 1 + PIECE_LENGTH
    # the same field number goes on (an archive's repeated `messages` fields)
    buf = filler(1) + b"\x0a\x01x" + b"\x00"
    assert rebuild.raw_end(buf, 0, len(buf)) == PIECE_LENGTH + 3
    # a lower field number anywhere else is read on (the end is the zero byte)
    buf = b"\x08\x01" + filler(2) + b"\x0a\x01x" + b"\x00"
    assert rebuild.raw_end(buf, 0, len(buf)) == len(buf) - 1


def test_entry_fields():
    a = archive(n=2)
    buf = bytes(PIECE_LENGTH) + padded(a)
    e = rebuild.entry_at(buf, PIECE_LENGTH, len(buf))
    assert e == IndexEntry(W0, W0 + 604800, (TOPIC,), PIECE_LENGTH, PIECE_LENGTH, PIECE_LENGTH - len(a))
    assert e.version == 0


def test_zero_byte_where_an_archive_starts():
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.entry_at(b"\x08" * 5 + bytes(10), 5, 15)
    assert str(e.value) == "byte 5: a zero byte where an archive should start"


def test_incomplete_archive_and_exact_fit():
    a = archive()
    buf = padded(a)
    assert rebuild.entry_at(buf, 0, len(buf)).size == PIECE_LENGTH          # ends exactly at the end of data
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.entry_at(buf, 0, len(buf) - 1)
    assert str(e.value) == (f"the archive at byte 0 needs {PIECE_LENGTH} bytes with its padding, data ends "
                            f"{PIECE_LENGTH - 1} bytes after its start (an incomplete archive)")
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.entry_at(b"\x01" + buf, 1, len(buf))
    assert "data ends 102399 bytes after its start" in str(e.value) and "the archive at byte 1 needs" in str(e.value)


def test_padding_must_be_zero():
    a = archive()
    buf = bytearray(padded(a))
    buf[-1] = 1
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.entry_at(bytes(buf), 0, len(buf))
    assert str(e.value) == "the padding of the archive at byte 0 holds non-zero bytes"


def test_undecodable_archive_and_opener():
    raw = b"\x08\x01"                                       # protobuf, but no metadata
    buf = padded(raw)
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.entry_at(buf, 0, len(buf))
    assert str(e.value) == ("the archive at byte 0 does not decode: archive has no metadata (not a "
                            "WakuMessageArchive, or encrypted)") and e.value.__suppress_context__
    a = archive()
    seen = []

    def opener(b):
        seen.append(b)
        return a
    e = rebuild.entry_at(buf, 0, len(buf), opener)
    assert seen == [raw] and (e.start, e.size, e.padding) == (W0, PIECE_LENGTH, PIECE_LENGTH - 2)


def test_walk_keys_are_archive_ids_in_data_order():
    a, b = archive(), archive(300_000, start=W0 + 604800)
    buf = padded(a) + padded(b)
    got = rebuild.walk(buf + b"\x01garbage", len(buf))
    assert [e.offset for e in got.values()] == [0, PIECE_LENGTH]
    assert all(k == e.archive_id for k, e in got.items())
    assert list(got.values())[1].size == 3 * PIECE_LENGTH


def test_rebuild_entries_reads_the_file(tmp_path):
    a, b = archive(), archive(start=W0 + 604800)
    p = tmp_path / "data"
    p.write_bytes(padded(a) + padded(b) + b"\x01\x02\x03")
    assert [e.offset for e in rebuild.rebuild_entries(p, length=2 * PIECE_LENGTH).values()] == [0, PIECE_LENGTH]
    assert [e.offset for e in rebuild.rebuild_entries(str(p), length=PIECE_LENGTH).values()] == [0]
    with pytest.raises(rebuild.RebuildError):
        rebuild.rebuild_entries(p)                         # the whole file: 3 stray bytes at the end
    p.write_bytes(padded(a))
    assert len(rebuild.rebuild_entries(p, length=10 * PIECE_LENGTH)) == 1   # a length past the end is cut
    assert rebuild.rebuild_entries(p, length=0) == {}
    seen = []
    rebuild.rebuild_entries(p, lambda raw: seen.append(raw) or raw)
    assert seen == [a]
    p.write_bytes(b"")
    assert rebuild.rebuild_entries(p) == {}


def test_layout_fits(tmp_path):
    a, b = archive(), archive(start=W0 + 604800)
    p = tmp_path / "data"
    p.write_bytes(padded(a) + padded(b))
    ea = IndexEntry(W0, W0 + 1, (TOPIC,), 0, PIECE_LENGTH, PIECE_LENGTH - len(a))
    eb = IndexEntry(W0, W0 + 1, (TOPIC,), PIECE_LENGTH, PIECE_LENGTH, PIECE_LENGTH - len(b))
    assert rebuild.layout_fits(p, []) is True
    assert rebuild.layout_fits(p, iter([ea, eb])) is True
    assert rebuild.layout_fits(str(p), [eb]) is True
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, PIECE_LENGTH, PIECE_LENGTH - len(a) + 1)]) is False
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, PIECE_LENGTH, PIECE_LENGTH - len(a) - 1)]) is False
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), PIECE_LENGTH, 2 * PIECE_LENGTH, 0)]) is False   # past end
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, PIECE_LENGTH, PIECE_LENGTH)]) is False       # raw 0
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, PIECE_LENGTH, -1)]) is False            # past end
    p.write_bytes(b"\x0f" + padded(a)[1:])
    assert rebuild.layout_fits(p, [ea]) is False                                      # not protobuf
    data = bytearray(padded(a))
    data[-1] = 7
    p.write_bytes(bytes(data))
    assert rebuild.layout_fits(p, [ea]) is False                                      # padding not zero
    p.write_bytes(b"")
    assert rebuild.layout_fits(p, [ea]) is False


def test_layout_fits_an_entry_that_ends_exactly_at_the_end(tmp_path):
    raw = b"\x08\x01\x10\x02"
    p = tmp_path / "data"
    p.write_bytes(raw)
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, 4, 0)]) is True
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, 5, 1)]) is False


def test_layout_fits_refuses_an_entry_past_the_end_before_reading(tmp_path):
    p = tmp_path / "data"
    p.write_bytes(b"\x08\x01" * 50)                      # protobuf to the last byte, no zero anywhere
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, 200, 0)]) is False
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 2, 100, 0)]) is False


def test_layout_fits_refuses_an_entry_that_is_all_padding(tmp_path):
    p = tmp_path / "data"
    p.write_bytes(bytes(PIECE_LENGTH))
    assert rebuild.layout_fits(p, [IndexEntry(0, 1, (), 0, PIECE_LENGTH, PIECE_LENGTH)]) is False


def test_a_tag_cut_by_the_end_is_not_protobuf():
    buf = b"\x08\x01\x0a" + b"\x05abcde"                  # `end` falls between a tag and its length
    with pytest.raises(rebuild.RebuildError) as e:
        rebuild.raw_end(buf, 0, 3)
    assert str(e.value).startswith("byte 2: not protobuf (")
