"""The Inspector's words and ticket report (gui/report.py, no Qt) on real archive folders: faults in plain
language with archive and data bytes, "Verified" only for what was checked, one sentence for a non-archive,
and the report as JSON and HTML."""
from __future__ import annotations

import json

import pytest

from core.archive import codec
from core.archive.constants import PIECE_LENGTH
from gui.inspection import open_source
from gui.report import FAILED, NOT_CHECKED, PASSED, build_report, checks, faults, headline, report_html, report_json

NOW = 1_760_000_000.0


def entries_of(folder):
    return codec.sorted_entries(codec.decode_index((folder / "index").read_bytes()))


def flip(folder, at: int) -> None:
    with open(folder / "data", "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0xFF]))


def status(res) -> dict[str, str]:
    return {c.name.split(" (")[0]: c.status for c in checks(res)}


def test_clean_folder_with_its_torrent_is_verified(community_copy):
    res = open_source(str(community_copy["folder"]))
    assert status(res) == {"Index": PASSED, "Archives": PASSED, "Piece hashes": PASSED}
    assert headline(res).startswith("Verified: ") and "no faults" in headline(res)
    assert faults(res) == []


def test_without_a_torrent_nothing_is_called_verified(community_copy):
    community_copy["torrent"].unlink()
    res = open_source(str(community_copy["folder"]))
    assert res.report.ok
    assert status(res) == {"Index": PASSED, "Archives": PASSED, "Piece hashes": NOT_CHECKED}
    text = headline(res)
    assert "Verified" not in text and "Not checked: the piece hashes" in text
    (w,) = faults(res)
    assert (w.code, w.severity) == ("pieces-unchecked", "warning") and ".torrent" in w.what_to_do


def test_an_index_alone_checks_only_the_index(community_copy, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "index").write_bytes((community_copy["folder"] / "index").read_bytes())
    res = open_source(str(lone / "index"))
    assert status(res) == {"Index": PASSED, "Archives": NOT_CHECKED, "Piece hashes": NOT_CHECKED}
    assert "Verified" not in headline(res) and "the archives and the piece hashes" in headline(res)


def test_a_flipped_byte_is_named_with_its_archive_and_bytes(community_copy):
    folder = community_copy["folder"]
    aid, e = entries_of(folder)[3]
    at = e.offset + e.raw_size // 2
    flip(folder, at)
    res = open_source(str(folder))
    first = faults(res)[0]
    assert (first.code, first.severity, first.archive_id) == ("piece-mismatch", "error", aid)
    assert first.data_start <= at <= first.data_end and first.data_start % PIECE_LENGTH == 0
    assert first.data_end - first.data_start == PIECE_LENGTH - 1
    assert aid in first.where and f"data bytes {first.data_start}..{first.data_end}" in first.where
    assert f"(piece {at // PIECE_LENGTH})" in first.where
    assert "altered" in first.title and "do not import" in first.what_to_do
    assert "message bytes" in first.detail                  # the verifier's own sentence is kept
    assert status(res)["Piece hashes"] == FAILED and status(res)["Archives"] == PASSED
    text = headline(res)
    assert text.startswith("2 faults found") and aid in text and "Verified" not in text


def test_padding_fault_points_at_the_archive_range(community_copy):
    folder = community_copy["folder"]
    aid, e = entries_of(folder)[2]
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset + e.size - 1)
        f.write(b"\x07")
    res = open_source(str(folder))
    pad = next(f for f in faults(res) if f.code == "padding-nonzero")
    assert pad.archive_id == aid and (pad.data_start, pad.data_end) == (e.offset, e.offset + e.size - 1)
    assert "non-zero" in pad.title and status(res)["Archives"] == FAILED


def test_truncated_data_is_explained(community_copy):
    folder = community_copy["folder"]
    with open(folder / "data", "r+b") as f:
        f.truncate((folder / "data").stat().st_size - PIECE_LENGTH)
    res = open_source(str(folder))
    cut = next(f for f in faults(res) if f.code == "index-past-data")
    assert "cut short" in cut.title and "interrupted" in cut.what_to_do
    assert status(res)["Index"] == FAILED


def test_what_is_not_an_archive_says_so_in_one_sentence(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("Dear support, my history is gone.\n")
    empty = tmp_path / "photos"
    empty.mkdir()
    blank = tmp_path / "blank.bin"
    blank.write_bytes(b"")
    for p, says in ((notes, "notes.txt is not an archive"), (empty, "photos is not an archive folder"),
                    (blank, "blank.bin is not an archive")):
        res = open_source(str(p))
        text = headline(res)
        assert text.startswith(says) and text.count(".") == 1 + p.name.count(".") and text.endswith(".")
        assert res.kind == "not-archive" and res.report is None and checks(res) == []
        rep = build_report(res, now=NOW)
        assert rep["not_an_archive"] == text and rep["ok"] is False and rep["faults"] == []


def test_a_data_file_without_its_index(tmp_path):
    d = tmp_path / "x"
    d.mkdir()
    (d / "data").write_bytes(b"\0" * PIECE_LENGTH)
    res = open_source(str(d / "data"))
    (f,) = faults(res)
    assert f.code == "index-missing" and "no index file" in f.title and "Copy" in f.what_to_do


def test_report_json_and_html(community_copy):
    folder = community_copy["folder"]
    aid, e = entries_of(folder)[1]
    flip(folder, e.offset + 10)
    res = open_source(str(folder))
    rep = build_report(res, now=NOW)
    assert rep["generated_at"] == "2025-10-09T08:53:20+00:00"     # the injected clock, not the wall clock
    back = json.loads(report_json(rep))
    assert back == rep and back["ok"] is False and back["kind"] == "folder"
    assert back["faults"][0]["archive_id"] == aid and back["faults"][0]["data_start"] == e.offset
    assert [a["id"] for a in back["archives"] if a["faulty"]] == [aid]
    assert back["torrent"]["infohash"] == community_copy["result"].infohash
    page = report_html(rep)
    assert page.startswith("<!DOCTYPE html>") and aid in page and "piece-mismatch" in page
    assert "class='failed'" in page and "Piece hashes (against the torrent)" in page


def test_html_escapes_everything_from_outside(tmp_path):
    odd = tmp_path / "<script>alert(1)<" / "x"
    odd.mkdir(parents=True)
    res = open_source(str(odd))
    page = report_html(build_report(res, now=NOW))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;" in page


def test_the_view_says_not_an_archive_in_one_sentence(qtbot, ops, tmp_path):
    from gui.views.inspector import InspectorView
    notes = tmp_path / "notes.txt"
    notes.write_text("not an archive")
    view = InspectorView(ops)
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.opened, timeout=10_000):
        view.open(notes)
    assert view.summary.text() == ("notes.txt is not an archive: it is neither an archive folder's index or data "
                                   "file nor a torrent.")
    assert view.findings.rowCount() == 0 and view.archives.rowCount() == 0 and view.checks.text() == ""
    assert view.summary.property("state") == "fault"


def test_rows_match_the_command_lines_and_each_archive_is_parsed_once(community_copy, monkeypatch):
    """The Inspector's rows take their counts and parse errors from the verify pass: the same rows as `archivist
    inspect` lists (inspect_path), from one parse per archive instead of two."""
    from core.archive.inspect import inspect_path
    folder = community_copy["folder"]
    aid, e = entries_of(folder)[1]
    with open(folder / "data", "r+b") as f:        # archive 1 no longer parses: its first byte is a bad tag
        f.seek(e.offset)
        f.write(b"\xff")
    cli_rows = [r.to_json() for r in inspect_path(str(folder)).rows]
    parsed = []
    real = codec.parse_archive_pb
    monkeypatch.setattr(codec, "parse_archive_pb", lambda raw, **kw: parsed.append(kw["archive_id"]) or real(raw, **kw))
    res = open_source(str(folder))
    assert [r.to_json() for r in res.rows] == cli_rows
    bad = next(r for r in res.rows if r.archive_id == aid)
    assert bad.messages is None and bad.error.startswith("archive-undecodable: ")
    assert all(r.messages for r in res.rows if r.archive_id != aid)
    assert sorted(parsed) == sorted(r.archive_id for r in res.rows)


def test_a_row_not_read_when_listed_is_not_decoded_on_click(tmp_path):
    """Two index entries over the same bytes: the second is listed with offset-overlap and not read. Clicking it in
    the Inspector refuses as `archivist inspect` does (core's Inspection.messages); it used to decode the bytes."""
    from core.archive.codec import ArchiveMessage, IndexEntry
    from core.archive.errors import ArchiveError
    from core.archive.inspect import inspect_path
    d = tmp_path / ("0x02" + "ab" * 32)
    d.mkdir()
    topic = b"\1\2\3\4"
    raw = codec.encode_archive(1000, 2000, [topic], [ArchiveMessage(b"s" * 65, 1000, topic, b"hello", hash=b"h" * 32)])
    size, pad = codec.padded_size(len(raw))
    (d / "data").write_bytes(raw + bytes(pad))
    a = IndexEntry(1000, 2000, (topic,), 0, size, pad)
    b = IndexEntry(1000, 2001, (topic,), 0, size, pad)
    (d / "index").write_bytes(codec.encode_index({a.archive_id: a, b.archive_id: b}))
    res, ins = open_source(str(d)), inspect_path(str(d))
    skipped = next(r for r in res.rows if r.error)
    assert skipped.error.startswith("offset-overlap: ")
    for reader in (res, ins):
        with pytest.raises(ArchiveError) as e:
            reader.messages(skipped.archive_id)
        assert e.value.code == "offset-overlap"
    good = next(r for r in res.rows if not r.error)
    assert [m.payload for m in res.messages(good.archive_id)] == [b"hello"]
