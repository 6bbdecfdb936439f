"""The verifier (core/archive/verify.py): each finding's code, sentence, archive and severity, each boundary (a
timestamp at the window's edges, padding that fills the whole slot) and the torrent rules, pinned against the
survivors of `make mutation` (docs/QUALITY.md). Folders are written with ArchiveFolder.append and torrents with
build_metainfo on real files; the expected sentences are the ones the docs promise (docs/FORMAT.md codes)."""
from __future__ import annotations

import hashlib
import shutil

import pytest

from core.archive import codec, verify as v
from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.archive.folder import ArchiveFolder, NewArchive
from core.archive.index_check import Finding
from core.archive.torrent import build_metainfo, parse_metainfo
from core.storage.archive_message import ArchiveMessage

CID = "0x02" + "ab" * 32
TOPIC = bytes.fromhex("00eb85a7")
W0, WEEK = 1_700_000_000, 604800


def msg(ts, h=None, i=0):
    return ArchiveMessage(b"\x04" + bytes(64), ts, TOPIC, b"payload %d" % i, b"", h if h is not None else bytes([i + 1]) * 32)


def arch(start=W0, msgs=None) -> NewArchive:
    msgs = [msg(start + i, i=i) for i in range(3)] if msgs is None else msgs
    return NewArchive(start, start + WEEK, (TOPIC,), codec.encode_archive(start, start + WEEK, [TOPIC], msgs))


def folder(tmp_path, name=CID, n=2, torrent=True):
    path = tmp_path / "archivedata" / name
    f = ArchiveFolder(path, create=True)
    ids = f.append([arch(W0 + i * WEEK) for i in range(n)])
    if torrent:
        (tmp_path / "archivedata" / f"{name}.torrent").write_bytes(build_metainfo(path, name))
    return path, ids


def codes(report):
    return [(f.code, f.severity) for f in report.findings]


def test_report_basics():
    r = v.Report("p")
    assert r.ok and r.passed() and r.passed(strict=True) and r.warnings == []
    r.add("w", "a warning", severity="warning")
    assert r.ok and r.passed() and not r.passed(strict=True) and r.warnings == [Finding("w", "a warning", None,
                                                                                         "warning")]
    r.add("e", "an error", "0xab")
    assert r.findings[-1] == Finding("e", "an error", "0xab", "error") and not r.ok and not r.passed()
    assert r.to_json() == {"path": "p", "ok": False, "strict": False, "archives": 0, "messages": 0,
                           "pieces_checked": False, "torrent": None,
                           "findings": [{"code": "w", "message": "a warning", "archive_id": None,
                                         "severity": "warning"},
                                        {"code": "e", "message": "an error", "archive_id": "0xab",
                                         "severity": "error"}]}
    ok = v.Report("q", torrent="t")
    ok.add("w", "x", severity="warning")
    assert ok.to_json()["ok"] is True and ok.to_json(strict=True) == {**ok.to_json(), "ok": False, "strict": True}
    assert ok.to_json()["pieces_checked"] is True and ok.to_json()["torrent"] == "t"


def test_verify_index_bytes():
    r = v.Report("p")
    assert v.verify_index_bytes(b"\x0a\x09short", r) == {} and r.archives == 0
    assert r.findings[0].code == "index-undecodable"
    assert r.findings[0].message.startswith("index does not decode as WakuMessageArchiveIndex: ")
    e = IndexEntry(W0, W0 + WEEK, (TOPIC,), 0, PIECE_LENGTH, 100)
    r = v.Report("p")
    got = v.verify_index_bytes(codec.encode_index({e.archive_id: e}), r, data_len=0)
    assert list(got) == [e.archive_id] and r.archives == 1 and [f.code for f in r.findings] == ["index-past-data"]
    r = v.Report("p")
    v.verify_index_bytes(codec.encode_index({e.archive_id: e}), r, data_len=PIECE_LENGTH)
    assert r.findings == []


def entry_for(raw: bytes, start=W0, end=W0 + WEEK, topics=(TOPIC,)):
    size, pad = codec.padded_size(len(raw))
    return IndexEntry(start, end, topics, 0, size, pad)


def blob(raw: bytes) -> bytes:
    size, pad = codec.padded_size(len(raw))
    return raw + bytes(pad)


def test_archive_bytes_clean_counts_messages():
    a = arch()
    r = v.Report("p")
    r.messages = 5
    v.verify_archive_bytes("0x1", entry_for(a.raw), blob(a.raw), r)
    assert r.findings == [] and r.messages == 8


def test_padding_larger_than_the_bytes():
    r = v.Report("p")
    v.verify_archive_bytes("0x1", IndexEntry(W0, W0 + 1, (), 0, 10, 11), bytes(10), r)
    assert r.findings == [Finding("padding-exceeds-size", "padding 11 does not fit in 10 bytes", "0x1")]
    r = v.Report("p")
    v.verify_archive_bytes("0x1", IndexEntry(W0, W0 + 1, (), 0, 20, 5), bytes(10), r)      # raw 15 > 10 read
    assert r.findings == [Finding("padding-exceeds-size", "padding 5 does not fit in 10 bytes", "0x1")]
    r = v.Report("p")                                  # all padding, raw 0: read on (and found undecodable)
    v.verify_archive_bytes("0x1", IndexEntry(W0, W0 + 1, (), 0, 10, 10), bytes(10), r)
    assert [f.code for f in r.findings] == ["archive-undecodable"]
    a = arch()
    r = v.Report("p")                                  # raw exactly the bytes read: no padding at all
    v.verify_archive_bytes("0x1", IndexEntry(W0, W0 + WEEK, (TOPIC,), 0, len(a.raw), 0), a.raw, r)
    assert r.findings == []


def test_nonzero_padding():
    a = arch()
    b = bytearray(blob(a.raw))
    b[-1] = 1
    r = v.Report("p")
    v.verify_archive_bytes("0x1", entry_for(a.raw), bytes(b), r)
    pad = PIECE_LENGTH - len(a.raw)
    assert r.findings == [Finding("padding-nonzero", f"padding of {pad} bytes holds non-zero bytes", "0x1")]
    assert r.messages == 3


def test_undecodable_archive_keeps_the_decoder_code_and_id():
    r = v.Report("p")
    raw = b"\x08\x01"
    v.verify_archive_bytes("0x1", entry_for(raw), blob(raw), r)
    assert r.findings == [Finding("archive-undecodable", "archive has no metadata (not a WakuMessageArchive, or "
                                  "encrypted)", "0x1")] and r.messages == 0
    # what the Inspector's rows show: why it does not parse, and no count
    assert r.unparsed == {"0x1": "archive-undecodable: archive has no metadata (not a WakuMessageArchive, or "
                                 "encrypted)"} and r.counts == {}
    a = arch()
    v.verify_archive_bytes("0x2", entry_for(a.raw), blob(a.raw), r)
    assert r.counts == {"0x2": 3} and list(r.unparsed) == ["0x1"]


@pytest.mark.parametrize("entry_kw", [dict(start=W0 + 1), dict(end=W0 + WEEK + 1), dict(topics=(TOPIC, b"x"))])
def test_metadata_mismatch(entry_kw):
    a = arch()
    e = entry_for(a.raw, **entry_kw)
    r = v.Report("p")
    v.verify_archive_bytes("0x1", e, blob(a.raw), r)
    want = (f"archive says [{W0}, {W0 + WEEK}) over 1 topics, index says [{e.start}, {e.end}) over "
            f"{len(e.topics)}")
    assert r.findings[0] == Finding("metadata-mismatch", want, "0x1")


def test_empty_archive():
    a = arch(msgs=[])
    r = v.Report("p")
    v.verify_archive_bytes("0x1", entry_for(a.raw), blob(a.raw), r)
    assert r.findings == [Finding("archive-empty", "archive holds no message (builders never write an empty "
                                  "archive)", "0x1")]


def test_bad_hashes_are_counted():
    a = arch(msgs=[msg(W0, b"\x01" * 31, 0), msg(W0, b"\x01" * 33, 1), msg(W0, b"", 2), msg(W0, None, 3)])
    r = v.Report("p")
    v.verify_archive_bytes("0x1", entry_for(a.raw), blob(a.raw), r)
    assert r.findings == [Finding("message-bad-hash", "3 of 4 messages have no 32-byte message hash", "0x1")]


def test_window_edges():
    inside = [msg(W0, i=0), msg(W0 + WEEK - 1, i=1)]
    outside = [msg(W0 - 1, i=2), msg(W0 + WEEK, i=3), msg(W0 + WEEK + 5, i=4)]
    a = arch(msgs=inside + outside)
    r = v.Report("p")
    v.verify_archive_bytes("0x1", entry_for(a.raw), blob(a.raw), r)
    assert r.findings == [Finding("message-outside-window", f"3 messages lie outside [{W0}, {W0 + WEEK})", "0x1")]
    assert r.messages == 5


def test_torrent_mismatch_reasons(tmp_path):
    path, _ = folder(tmp_path)
    mi = parse_metainfo(build_metainfo(path, CID))
    assert v.torrent_mismatch(mi, path) is None
    other = parse_metainfo(build_metainfo(path, "0x03" + "cd" * 32))
    assert v.torrent_mismatch(other, path) == ("torrent-bad-name", f"torrent is for '0x03{'cd' * 32}', not for "
                                               f"this folder {CID}")
    bad = tmp_path / "not-a-community"
    shutil.copytree(path, bad)
    assert v.torrent_mismatch(mi, bad) == ("torrent-bad-name", "folder name 'not-a-community' is not a community "
                                           "ID, so no torrent can be matched to it (name the folder after the "
                                           "community)")
    (path / "index").write_bytes((path / "index").read_bytes() + b"\x00")
    size = (path / "index").stat().st_size
    assert v.torrent_mismatch(mi, path) == ("torrent-file-size", f"torrent says index is {size - 1} bytes, the "
                                            f"file has {size}")
    (path / "data").unlink()
    assert v.torrent_mismatch(mi, path) == ("torrent-file-size", f"torrent says data is {2 * PIECE_LENGTH} "
                                            "bytes, the file has -1")


def test_find_torrents_beside_and_in_siblings(tmp_path):
    path, _ = folder(tmp_path, torrent=False)
    assert v.find_torrents(path) == []
    for d in ("a", "torrents", "z"):
        (tmp_path / d).mkdir()
    (tmp_path / "torrents" / f"{CID}.torrent").write_bytes(b"x")
    (tmp_path / "z" / f"{CID}.torrent").write_bytes(b"y")
    (tmp_path / "archivedata" / f"{CID}.torrent").write_bytes(b"z")
    (tmp_path / "a" / f"{CID}.torrent").mkdir()                      # not a file
    assert v.find_torrents(path) == [tmp_path / "archivedata" / f"{CID}.torrent",
                                     tmp_path / "torrents" / f"{CID}.torrent", tmp_path / "z" / f"{CID}.torrent"]
    bad = tmp_path / "archivedata" / "x"
    bad.mkdir()
    (tmp_path / "archivedata" / "x.torrent").write_bytes(b"")
    assert v.find_torrents(bad) == []


def test_check_pieces_names_the_first_bad_piece(tmp_path):
    path, _ = folder(tmp_path, n=3)
    mi = parse_metainfo(build_metainfo(path, CID))
    r = v.Report("p")
    v.check_pieces(mi, path, r)
    assert r.findings == []
    d = bytearray((path / "data").read_bytes())
    d[PIECE_LENGTH + 5] ^= 1
    d[2 * PIECE_LENGTH + 5] ^= 1
    (path / "data").write_bytes(bytes(d))
    v.check_pieces(mi, path, r)
    assert r.findings == [Finding("torrent-piece-mismatch", f"2 pieces do not match data || index (first: piece 1 "
                                  f"at byte {PIECE_LENGTH})")]
    assert hashlib.sha1(bytes(d[:PIECE_LENGTH])).digest() == mi.piece_hash(0)


def test_check_pieces_reads_past_one_block(tmp_path):
    path = tmp_path / CID
    f = ArchiveFolder(path, create=True)
    f.append([arch(W0 + i * WEEK) for i in range(65)])            # 65 pieces: more than one 64-piece read
    mi = parse_metainfo(build_metainfo(path, CID))
    d = bytearray((path / "data").read_bytes())
    d[64 * PIECE_LENGTH + 3] ^= 1
    (path / "data").write_bytes(bytes(d))
    r = v.Report("p")
    v.check_pieces(mi, path, r)
    assert r.findings[0].message.endswith(f"(first: piece 64 at byte {64 * PIECE_LENGTH})")


def test_verify_torrent_explicit_and_found(tmp_path):
    path, _ = folder(tmp_path)
    good = parse_metainfo(build_metainfo(path, CID))
    other = parse_metainfo(build_metainfo(path, "0x03" + "cd" * 32))
    r = v.Report("p")
    assert v.verify_torrent(other, path, r, "o.torrent", explicit=True) is False
    assert codes(r) == [("torrent-bad-name", "error")] and r.torrent is None
    r = v.Report("p")
    assert v.verify_torrent(other, path, r, "o.torrent", explicit=False) is False
    assert r.findings == [Finding("torrent-not-used", f"found o.torrent but did not use it: torrent is for "
                                  f"'0x03{'cd' * 32}', not for this folder {CID}", None, "warning")]
    r = v.Report("p")
    assert v.verify_torrent(good, path, r, "g.torrent") is True and r.torrent == "g.torrent" and r.findings == []
    r = v.Report("p")
    assert v.verify_torrent(good, path, r) is True and r.torrent == CID


def test_folder_with_given_torrent(tmp_path):
    path, ids = folder(tmp_path)
    t = tmp_path / "archivedata" / f"{CID}.torrent"
    r = v.verify_folder(path, t)
    assert r.findings == [] and r.torrent == str(t) and r.archives == 2 and r.messages == 6
    r = v.verify_folder(str(path), str(t))
    assert r.torrent == str(t) and r.path == str(path)
    bad = tmp_path / "bad.torrent"
    bad.write_bytes(b"not bencode")
    r = v.verify_folder(path, bad)
    assert codes(r) == [("torrent-undecodable", "error"), ("pieces-unchecked", "warning")]
    assert r.findings[0].message.startswith(f"{bad}: not a bencoded torrent")
    assert r.findings[1].message == ("piece hashes were NOT checked (the torrent given was not usable): every "
                                     "archive was decoded and checked, but message bytes altered without breaking "
                                     "the encoding cannot be detected; pass --torrent <community ID>.torrent")


def test_folder_without_torrent_says_why(tmp_path):
    path, _ = folder(tmp_path)
    r = v.verify_folder(path)
    assert codes(r) == [("pieces-unchecked", "warning")] and "(no torrent was given)" in r.findings[0].message
    r = v.verify_folder(path, discover=True)
    assert r.findings == [] and r.torrent == str(tmp_path / "archivedata" / f"{CID}.torrent")
    (tmp_path / "archivedata" / f"{CID}.torrent").unlink()
    r = v.verify_folder(path, discover=True)
    assert "(no matching torrent was found)" in r.findings[0].message


def test_discovery_skips_unreadable_and_stale_torrents(tmp_path):
    path, _ = folder(tmp_path)
    (tmp_path / "archivedata" / f"{CID}.torrent").write_bytes(b"junk")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / f"{CID}.torrent").write_bytes(build_metainfo(path, CID))
    r = v.verify_folder(path, discover=True)
    junk = tmp_path / "archivedata" / f"{CID}.torrent"
    assert codes(r) == [("torrent-not-used", "warning")] and r.torrent == str(tmp_path / "t" / f"{CID}.torrent")
    assert r.findings[0].message.startswith(f"found {junk} but did not use it: torrent-undecodable: not a bencoded")


def test_discovery_stops_at_the_first_torrent_that_fits(tmp_path):
    path, _ = folder(tmp_path)
    for d in ("s", "t"):
        (tmp_path / d).mkdir()
        (tmp_path / d / f"{CID}.torrent").write_bytes(build_metainfo(path, CID))
    r = v.verify_folder(path, discover=True)
    assert r.findings == [] and r.torrent == str(tmp_path / "archivedata" / f"{CID}.torrent")


def test_missing_index_and_data(tmp_path):
    path, _ = folder(tmp_path)
    (path / "data").unlink()
    r = v.verify_folder(path)
    assert r.findings[0] == Finding("data-missing", f"{path / 'data'} does not exist")
    assert ("index-past-data", "error") in codes(r) and r.messages == 0
    assert Finding("index-past-data", f"index describes {2 * PIECE_LENGTH} bytes but data holds 0") in r.findings
    (path / "index").unlink()
    r = v.verify_folder(path)
    assert r.findings == [Finding("index-missing", f"{path / 'index'} does not exist")]


def test_unreadable_index_is_one_finding(tmp_path, monkeypatch):
    from core.archive import inspect
    path, _ = folder(tmp_path)
    monkeypatch.setattr(inspect, "MAX_INDEX_BYTES", 10)
    r = v.verify_folder(path)
    size = (path / "index").stat().st_size
    assert r.findings == [Finding("index-too-big", f"index {path / 'index'} is {size} bytes, over the 10-byte limit")]
    assert r.archives == 0
    r = v.verify_index_file(path / "index")
    assert [f.code for f in r.findings] == ["index-too-big"]
    (tmp_path / "lonely").mkdir()
    (tmp_path / "lonely" / "index").write_bytes((path / "index").read_bytes())
    lonely = tmp_path / "lonely" / "index"
    r = v.verify_index_file(lonely)
    size = lonely.stat().st_size
    assert r.findings == [Finding("index-too-big", f"index {lonely} is {size} bytes, over the 10-byte limit")]


def test_absurd_size_is_reported_once_and_not_read(tmp_path, monkeypatch):
    path, ids = folder(tmp_path)
    monkeypatch.setattr(v, "plan_reads", lambda entries, n: [(ids[0], entries[ids[0]], "size-absurd"),
                                                             (ids[1], entries[ids[1]], "offset-overlap"),
                                                             ])
    r = v.verify_folder(path)
    size = PIECE_LENGTH
    assert r.findings[0] == Finding("size-absurd", f"size {size} is larger than any archive can be", ids[0])
    assert r.messages == 0


def test_each_archive_is_read_at_its_offset(tmp_path):
    path, ids = folder(tmp_path, n=3)
    r = v.verify_folder(path)
    assert r.messages == 9 and r.archives == 3 and codes(r) == [("pieces-unchecked", "warning")]


def test_index_file_alone_or_in_a_folder(tmp_path):
    path, _ = folder(tmp_path)
    t = tmp_path / "archivedata" / f"{CID}.torrent"
    assert v.verify_index_file(path / "index", t).torrent == str(t)
    assert v.verify_index_file(path / "data", t).messages == 6
    assert v.verify_index_file(str(path / "data"), discover=True).torrent == str(t)
    r = v.verify_index_file(path / "index")                 # a torrent lies beside, but discovery is asked for
    assert r.torrent is None and "(no torrent was given)" in r.findings[-1].message
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(path / "index", lonely / "index")
    r = v.verify_index_file(lonely / "index", t)
    assert r.path == str(lonely / "index") and r.archives == 2 and r.torrent is None
    assert r.findings == [Finding("archives-unchecked", "no data file beside this index: only the index itself "
                                  "was checked", None, "warning"),
                          Finding("pieces-unchecked", "piece hashes were NOT checked (no data file)", None,
                                  "warning")]
    shutil.copy(path / "index", lonely / "other-name")
    (lonely / "data").write_bytes(b"")
    assert v.verify_index_file(lonely / "other-name").findings[0].code == "archives-unchecked"


def test_a_found_torrent_that_cannot_be_read_is_named(tmp_path, monkeypatch):
    import errno
    path, _ = folder(tmp_path)
    found = tmp_path / "archivedata" / f"{CID}.torrent"

    def unreadable(p, **kw):
        raise OSError(errno.EIO, "boom")
    monkeypatch.setattr(v, "read_metainfo", unreadable)
    r = v.verify_folder(path, discover=True)
    assert r.findings[0] == Finding("torrent-not-used", f"found {found} but did not use it: unreadable: [Errno 5] "
                                    "boom", None, "warning")


def test_long_names_are_cut_to_80_characters(tmp_path):
    path, _ = folder(tmp_path)
    long_name = "n" * 100
    other = parse_metainfo(build_metainfo(path, long_name))
    assert v.torrent_mismatch(other, path)[1] == f"torrent is for {'n' * 80!r}, not for this folder {CID}"
    bad = tmp_path / ("x" * 100)
    shutil.copytree(path, bad)
    assert v.torrent_mismatch(other, bad)[1].startswith(f"folder name {'x' * 80!r} is not a community ID")


def test_a_torrent_is_given_unless_said_otherwise(tmp_path):
    path, _ = folder(tmp_path)
    other = parse_metainfo(build_metainfo(path, "0x03" + "cd" * 32))
    r = v.Report("p")
    assert v.verify_torrent(other, path, r) is False and codes(r) == [("torrent-bad-name", "error")]
