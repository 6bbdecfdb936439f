"""The one importer's rules (core/history_import.py), each pinned by a test that fails when the rule changes
(written against the survivors of `make mutation`, docs/QUALITY.md). Real archives in a real `data` file."""
from __future__ import annotations

import io

import pytest
from coincurve import PrivateKey
from Crypto.Hash import keccak

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.history_import import (ImportResult, WindowImport, archive_from_blob, describe, history_row, plan_import,
                                 read_archive_rows, read_window_rows, whole_windows, window_of)
from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
from core.status.chat_message import encode_chat_message
from core.status.unwrap import Unwrapped, no_unwrap

W = 7 * 86400
T = 1_700_000_000
TOPIC = b"\x01\x02\x03\x04"
AUTHOR = PrivateKey(bytes(range(1, 33)))


def _msg(i: int, *, payload: bytes | None = None, hash_: bytes | None = None, sig: bytes = b"") -> ArchiveMessage:
    return ArchiveMessage(sig, T + i, TOPIC, payload if payload is not None else b"p%d" % i,
                          hash=hash_ if hash_ is not None else bytes([i]) * 32)


def _archive(start: int, end: int, messages) -> tuple[bytes, int, int]:
    raw = codec.encode_archive(start, end, [TOPIC], messages)
    size, pad = codec.padded_size(len(raw))
    return raw + b"\0" * pad, size, pad


def _data(tmp_path, windows):
    """A `data` file holding one archive per (start, end, messages); its index in data order."""
    blob, index = b"", {}
    for start, end, messages in windows:
        padded, size, pad = _archive(start, end, messages)
        e = IndexEntry(start, end, (TOPIC,), len(blob), size, pad)
        index[e.archive_id] = e
        blob += padded
    path = tmp_path / "data"
    path.write_bytes(blob)
    return path, index


def _entry(start, end, offset, key):
    return key, IndexEntry(start, end, (TOPIC,), offset, PIECE_LENGTH, 10)


# -- which archives, in which groups ------------------------------------------------------------------------

def test_whole_windows_takes_every_chunk_of_a_touched_window_in_data_order():
    # window A=[0,W) in two chunks (listed out of data order), window B=[W,2W) in one, C=[2W,3W) in one
    index = dict([_entry(W, 2 * W, 2 * PIECE_LENGTH, "b"), _entry(0, W, PIECE_LENGTH, "a2"),
                  _entry(2 * W, 3 * W, 3 * PIECE_LENGTH, "c"), _entry(0, W, 0, "a1")])
    assert window_of(index["a2"]) == (0, W)
    assert whole_windows(index, ["a2"]) == ["a1", "a2"]
    assert whole_windows(index, ["c", "a1"]) == ["a1", "a2", "c"]
    assert whole_windows(index, []) == []
    # two windows with the same start: the shorter one first
    index["d"] = IndexEntry(0, W - 1, (TOPIC,), 4 * PIECE_LENGTH, PIECE_LENGTH, 10)
    assert whole_windows(index, ["d", "a1"]) == ["d", "a1", "a2"]


def test_whole_windows_orders_chunks_by_offset_then_by_key_and_accepts_entries_without_offset():
    index = dict([_entry(0, W, 5 * PIECE_LENGTH, "a"), _entry(0, W, 0, "z")])
    assert whole_windows(index, ["a"]) == ["z", "a"]

    class CodexEntry:          # a Codex index entry has a window but no offset
        def __init__(self, start, end):
            self.start, self.end = start, end
    codex = {"y": CodexEntry(0, W), "x": CodexEntry(0, W), "w": CodexEntry(W, 2 * W)}
    assert whole_windows(codex, ["y"]) == ["x", "y"]


def test_plan_import_groups_by_window_oldest_first_and_skips_what_is_done():
    index = dict([_entry(W, 2 * W, 2 * PIECE_LENGTH, "b"), _entry(0, W, 0, "a1"), _entry(0, W, PIECE_LENGTH, "a2")])
    assert plan_import(index, ["b", "a2"]) == [WindowImport(0, W, ("a1", "a2")), WindowImport(W, 2 * W, ("b",))]
    assert plan_import(index, ["a1", "b"], imported=["a1"]) == [WindowImport(0, W, ("a2",)),
                                                                 WindowImport(W, 2 * W, ("b",))]
    assert plan_import(index, ["a1", "b"], imported=iter(["a1", "a2"])) == [WindowImport(W, 2 * W, ("b",))]
    assert plan_import(index, iter(["b"]), imported=["b"]) == []
    assert plan_import(index, []) == []


def test_plan_import_refuses_an_archive_the_index_does_not_hold():
    index = dict([_entry(0, W, 0, "a")])
    with pytest.raises(ArchiveError, match=r"^archive 0xgone is not in the index$") as ei:
        plan_import(index, ["a", "0xgone", "0xother"])
    assert (ei.value.code, ei.value.archive_id) == ("unknown-archive", "0xgone")


def test_describe_and_result_json():
    ws = [WindowImport(0, W, ("a", "b")), WindowImport(W, 2 * W, ("c",))]
    assert describe(ws) == "3 archive(s) in 2 window(s)"
    assert describe([]) == "0 archive(s) in 0 window(s)"
    r = ImportResult("0xc", chosen=3, imported_archive_ids=["a"])
    j = r.to_json()
    assert j == {"community_id": "0xc", "chosen": 3, "already_imported": 0, "imported_archive_ids": ["a"],
                 "windows": 0, "messages": 0, "failed": {}}
    j["chosen"] = 9
    assert r.chosen == 3                                   # a copy, not the result's own dict


# -- the rows ----------------------------------------------------------------------------------------------

def test_history_row_of_a_status_chat_message_names_its_author():
    chat = encode_chat_message("hello", "chat-1", clock=42, timestamp_ms=(T + 1) * 1000)
    payload = wrap_public(wrap_application(chat, CHAT_MESSAGE, AUTHOR), "install-1")
    m = _msg(1, payload=payload, sig=b"envelope-signer")
    row = history_row("0xc", m, "0xa")
    author = AUTHOR.public_key.format(compressed=False)
    assert row == ("0xc", m.hash, T + 1, TOPIC, author, "chat-1", 42, None, CHAT_MESSAGE, "hello", payload, "0xa")


def test_history_row_of_an_opaque_payload_keeps_it_raw_with_the_envelope_signer():
    m = _msg(2, payload=b"\xff\xfe not protobuf", sig=b"sig")
    assert history_row("0xc", m, "0xa") == ("0xc", m.hash, T + 2, TOPIC, b"sig", None, None, None, None, None,
                                            m.payload, "0xa")
    unsigned = _msg(2, payload=b"x")
    assert history_row("0xc", unsigned, "0xa", no_unwrap)[4] is None


def test_history_row_author_falls_back_to_the_envelope_signer_then_none():
    u = Unwrapped(chat_id="c", clock=1, message_id="m", message_type=7, text="t", author=None)
    assert history_row("0xc", _msg(3, sig=b"s"), "0xa", lambda p: u)[4:10] == (b"s", "c", 1, "m", 7, "t")
    assert history_row("0xc", _msg(3), "0xa", lambda p: u)[4] is None


def test_message_without_hash_is_keyed_by_the_keccak_of_its_encoding():
    a, b = _msg(4, hash_=b""), _msg(5, hash_=b"")
    k = keccak.new(digest_bits=256)
    k.update(a.to_pb().SerializeToString(deterministic=True))
    ha, hb = history_row("0xc", a, "0xa", no_unwrap)[1], history_row("0xc", b, "0xa", no_unwrap)[1]
    assert ha == k.digest() and ha != hb and len(hb) == 32


# -- reading an archive out of `data` ----------------------------------------------------------------------

def test_read_archive_and_window_rows_from_a_real_data_file(tmp_path):
    first, second = [_msg(1), _msg(2)], [_msg(3)]
    path, index = _data(tmp_path, [(T, T + W, first), (T, T + W, second)])
    a1, a2 = list(index)
    with open(path, "rb") as f:
        rows = read_archive_rows(f, "0xc", a2, index[a2], unwrap=no_unwrap)
    assert [(r[0], r[1], r[9], r[11]) for r in rows] == [("0xc", _msg(3).hash, None, a2)]
    rows = read_window_rows(path, "0xc", index, WindowImport(T, T + W, (a1, a2)), unwrap=no_unwrap)
    assert [(r[0], r[1], r[2], r[11]) for r in rows] == [("0xc", m.hash, m.timestamp, a)
                                                          for a, ms in ((a1, first), (a2, second)) for m in ms]
    # the unwrapper given is the one used, for every row
    said = lambda p: Unwrapped(text="said " + p.decode())       # noqa: E731
    with open(path, "rb") as f:
        assert [r[9] for r in read_archive_rows(f, "0xc", a1, index[a1], None, said)] == ["said p1", "said p2"]
    rows = read_window_rows(path, "0xc", index, WindowImport(T, T + W, (a1, a2)), None, said)
    assert [r[9] for r in rows] == ["said p1", "said p2", "said p3"]


def test_an_archive_that_does_not_decode_is_named_in_the_error(tmp_path):
    e = IndexEntry(T, T + W, (TOPIC,), 0, 8, 4)
    path = tmp_path / "data"
    path.write_bytes(b"\0\0\0\7" + b"\0" * 4)
    with open(path, "rb") as f, pytest.raises(ArchiveError) as ei:
        read_archive_rows(f, "0xc", "0xbad", e)
    assert (ei.value.code, ei.value.archive_id) == ("archive-undecodable", "0xbad")
    with pytest.raises(ArchiveError) as ei:                     # the same through a whole window
        read_window_rows(path, "0xc", {"0xbad": e}, WindowImport(T, T + W, ("0xbad",)))
    assert (ei.value.code, ei.value.archive_id) == ("archive-undecodable", "0xbad")


def test_an_opener_decrypts_before_decoding(tmp_path):
    plain = codec.encode_archive(T, T + W, [TOPIC], [_msg(1)])
    sealed = bytes(b ^ 0x5A for b in plain)
    size, pad = codec.padded_size(len(sealed))
    e = IndexEntry(T, T + W, (TOPIC,), 0, size, pad)
    seen = []

    def opener(raw):
        seen.append(raw)
        return bytes(b ^ 0x5A for b in raw)
    arch = archive_from_blob("0xa", e, sealed + b"\0" * pad, opener)
    assert seen == [sealed] and [m.hash for m in arch.messages] == [_msg(1).hash]
    path = tmp_path / "data"
    path.write_bytes(sealed + b"\0" * pad)
    rows = read_window_rows(path, "0xc", {"0xa": e}, WindowImport(T, T + W, ("0xa",)), opener, no_unwrap)
    assert [r[1] for r in rows] == [_msg(1).hash]
    with open(path, "rb") as f:                                 # one archive (what Spark's executors read)
        assert [r[1] for r in read_archive_rows(f, "0xc", "0xa", e, opener, no_unwrap)] == [_msg(1).hash]


def _refused(aid, e, blob, code, message):
    with pytest.raises(ArchiveError) as ei:
        archive_from_blob(aid, e, blob)
    assert (ei.value.code, ei.value.archive_id, str(ei.value)) == (code, aid, message)


def test_each_damaged_archive_is_refused_with_its_code_and_sentence():
    padded, size, pad = _archive(T, T + W, [_msg(1)])
    e = IndexEntry(T, T + W, (TOPIC,), 0, size, pad)
    assert [m.hash for m in archive_from_blob("0xa", e, padded).messages] == [_msg(1).hash]
    _refused("0xa", e, padded[:-1], "archive-incomplete",
             f"archive 0xa is not fully downloaded: data holds {size - 1} of its {size} bytes")
    _refused("0xa", e, padded + b"\0", "archive-incomplete",
             f"archive 0xa is not fully downloaded: data holds {size + 1} of its {size} bytes")
    big = IndexEntry(T, T + W, (TOPIC,), 0, size, size + 1)
    _refused("0xa", big, padded, "padding-exceeds-size",
             f"archive 0xa: padding {size + 1} is larger than its size {size}")
    _refused("0xa", e, b"\0" * size, "archive-incomplete",
             "archive 0xa is not downloaded (its bytes in data are all zeros)")
    _refused("0xa", e, padded[:-1] + b"\1", "padding-nonzero", "archive 0xa: padding is not zeros")
    other = IndexEntry(T, T + 2 * W, (TOPIC,), 0, size, pad)
    _refused("0xa", other, padded, "metadata-mismatch",
             f"archive 0xa says [{T}, {T + W}), its index entry [{T}, {T + 2 * W})")
    other = IndexEntry(T + 1, T + W, (TOPIC,), 0, size, pad)
    _refused("0xa", other, padded, "metadata-mismatch",
             f"archive 0xa says [{T}, {T + W}), its index entry [{T + 1}, {T + W})")


def test_padding_equal_to_size_or_zero_and_a_single_nonzero_byte_count_right():
    # padding == size: nothing but padding, i.e. all zeros, so the archive is not downloaded
    e = IndexEntry(T, T + W, (TOPIC,), 0, PIECE_LENGTH, PIECE_LENGTH)
    _refused("0xa", e, b"\0" * PIECE_LENGTH, "archive-incomplete",
             "archive 0xa is not downloaded (its bytes in data are all zeros)")
    # no padding at all: the whole blob is the archive (a raw size of exactly one piece needs none)
    raw = codec.encode_archive(T, T + W, [TOPIC], [_msg(1)])
    e = IndexEntry(T, T + W, (TOPIC,), 0, len(raw), 0)
    assert len(archive_from_blob("0xa", e, raw).messages) == 1
    # raw bytes holding one non-zero byte are downloaded (they then fail to decode as an archive, not as missing)
    e = IndexEntry(T, T + W, (TOPIC,), 0, 8, 4)
    with pytest.raises(ArchiveError) as ei:
        archive_from_blob("0xa", e, b"\0\0\0\7" + b"\0" * 4)
    assert ei.value.code not in ("archive-incomplete", "padding-nonzero")


def test_read_archive_rows_reads_at_the_entrys_offset():
    padded, size, pad = _archive(T, T + W, [_msg(9)])
    f = io.BytesIO(b"\0" * PIECE_LENGTH + padded)
    e = IndexEntry(T, T + W, (TOPIC,), PIECE_LENGTH, size, pad)
    assert [r[1] for r in read_archive_rows(f, "0xc", "0xa", e, None, no_unwrap)] == [_msg(9).hash]


def test_an_archive_larger_than_any_archive_is_refused_before_it_is_read(tmp_path):
    """A hostile index can give an archive any size that its torrent's data holds; the importer reads an archive
    whole, so it refuses one over MAX_ARCHIVE_BYTES (64 MiB) by its entry alone, in every read path."""
    from core.archive.index_check import MAX_ARCHIVE_BYTES
    from core.history_import import read_window_preview, seek_archive
    big = MAX_ARCHIVE_BYTES + PIECE_LENGTH
    e = IndexEntry(T, T + W, (TOPIC,), 0, big, 4)
    path = tmp_path / "data"
    with open(path, "wb") as f:
        f.truncate(big)                       # sparse: the size is there, the reads must not be
    reads = []

    class Watched(io.FileIO):
        def read(self, n=-1):
            reads.append(n)
            return super().read(n)

    with Watched(path) as f:
        for read in (lambda: read_archive_rows(f, "0xc", "0xbig", e),
                     lambda: seek_archive(f, "0xbig", e)):
            with pytest.raises(ArchiveError) as ei:
                read()
            assert (ei.value.code, ei.value.archive_id) == ("size-absurd", "0xbig")
            assert f"size {big} is larger than any archive can be ({MAX_ARCHIVE_BYTES} bytes at most)" in str(ei.value)
    assert reads == []
    for window in (read_window_rows, read_window_preview):
        with pytest.raises(ArchiveError) as ei:
            window(path, "0xc", {"0xbig": e}, WindowImport(T, T + W, ("0xbig",)))
        assert (ei.value.code, ei.value.archive_id) == ("size-absurd", "0xbig") and "archive 0xbig: " in str(ei.value)
    # an archive of exactly the bound is read (and then refused for what it holds: zeros, not downloaded)
    ok = IndexEntry(T, T + W, (TOPIC,), 0, MAX_ARCHIVE_BYTES, 4)
    with pytest.raises(ArchiveError) as ei:
        read_window_rows(path, "0xc", {"0xok": ok}, WindowImport(T, T + W, ("0xok",)))
    assert ei.value.code == "archive-incomplete"
