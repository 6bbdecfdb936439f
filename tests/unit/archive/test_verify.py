"""Each kind of corruption gives a precise finding, and `archivist verify` exits non-zero with it."""
import shutil

import pytest

from core.archive import codec
from core.archive.cli import register  # noqa: F401  (the CLI under test)
from core.archive.errors import CorruptFolder
from core.archive.folder import ArchiveFolder
from core.archive.verify import verify_folder
from core.cli import main


def _entries(folder):
    return codec.decode_index((folder / "index").read_bytes())


def _write_index(folder, entries):
    (folder / "index").write_bytes(codec.encode_index(entries))


def _rekey(entries):
    return {e.archive_id: e for e in entries.values()}


def corrupt_key(folder, s):
    es = _entries(folder)
    k = sorted(es)[0]
    es["0x" + "00" * 32] = es.pop(k)
    _write_index(folder, es)


def corrupt_offset_gap(folder, s):
    es = _entries(folder)
    last = max(es.values(), key=lambda e: e.offset)
    es = {k: v for k, v in es.items() if v is not last}
    moved = codec.IndexEntry(last.start, last.end, last.topics, last.offset + 102400, last.size, last.padding)
    es[moved.archive_id] = moved
    _write_index(folder, es)
    with open(folder / "data", "ab") as f:
        f.write(bytes(102400 * 2))


def corrupt_offset_overlap(folder, s):
    es = _entries(folder)
    second = sorted(es.values(), key=lambda e: e.offset)[1]
    es = {k: v for k, v in es.items() if v is not second}
    moved = codec.IndexEntry(second.start, second.end, second.topics, second.offset - 51200, second.size,
                             second.padding)
    es[moved.archive_id] = moved
    _write_index(folder, es)


def corrupt_size(folder, s):
    es = _entries(folder)
    last = max(es.values(), key=lambda e: e.offset)
    es = {k: v for k, v in es.items() if v is not last}
    bad = codec.IndexEntry(last.start, last.end, last.topics, last.offset, last.size - 1000, last.padding - 1000)
    es[bad.archive_id] = bad
    _write_index(folder, es)
    with open(folder / "data", "r+b") as f:
        f.truncate(last.offset + last.size - 1000)


def corrupt_padding(folder, s):
    e = sorted(_entries(folder).values(), key=lambda e: e.offset)[0]
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset + e.size - 1)
        f.write(b"\x07")


def corrupt_archive_bytes(folder, s):
    e = sorted(_entries(folder).values(), key=lambda e: e.offset)[0]
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset)
        f.write(b"\xff\xff\xff\xff")


def corrupt_window(folder, s):
    es = _entries(folder)
    first = sorted(es.values(), key=lambda e: e.offset)[0]
    es = {k: v for k, v in es.items() if v is not first}
    bad = codec.IndexEntry(first.end, first.start, first.topics, first.offset, first.size, first.padding)
    es[bad.archive_id] = bad
    _write_index(folder, es)


def corrupt_index_past_data(folder, s):
    with open(folder / "data", "r+b") as f:
        f.truncate((folder / "data").stat().st_size - 102400)


def corrupt_index_bytes(folder, s):
    (folder / "index").write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")


def corrupt_torrent_piece(folder, s):
    # change a data byte inside an archive's padding-free region *and* keep the archive decodable: the
    # thirdPartyId/hash bytes of a message are opaque, so flip a byte at the end of the raw archive
    e = sorted(_entries(folder).values(), key=lambda e: e.offset)[0]
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset + e.raw_size - 1)
        b = f.read(1)
        f.seek(e.offset + e.raw_size - 1)
        f.write(bytes([b[0] ^ 1]))


CASES = [
    (corrupt_key, "key-mismatch"),
    (corrupt_offset_gap, "offset-gap"),
    (corrupt_offset_overlap, "offset-overlap"),
    (corrupt_size, "size-not-piece-multiple"),
    (corrupt_padding, "padding-nonzero"),
    (corrupt_archive_bytes, "archive-undecodable"),
    (corrupt_window, "window-inverted"),
    (corrupt_index_past_data, "index-past-data"),
    (corrupt_index_bytes, "index-undecodable"),
    (corrupt_torrent_piece, "torrent-piece-mismatch"),
]


def test_clean_folder_verifies(built, capsys):
    s, topics, res, folder = built
    assert verify_folder(folder, res.torrent_path).ok
    assert main(["verify", str(folder)]) == 0
    assert "OK: " in capsys.readouterr().out


@pytest.mark.parametrize("corrupt,code", CASES, ids=[c for _, c in CASES])
def test_each_corruption_is_named(built, tmp_path, corrupt, code, capsys):
    s, topics, res, folder = built
    corrupt(folder, s)
    report = verify_folder(folder, res.torrent_path)
    assert not report.ok
    assert code in {f.code for f in report.findings}, report.findings
    assert main(["verify", str(folder), "--torrent", res.torrent_path]) == 1
    out = capsys.readouterr().out
    assert code in out and "FAILED" in out


def test_verify_json_names_archive(built, capsys):
    import json
    s, topics, res, folder = built
    corrupt_padding(folder, s)
    assert main(["verify", str(folder), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    bad = [f for f in rep["findings"] if f["code"] == "padding-nonzero"]
    first = sorted(_entries(folder).items(), key=lambda kv: kv[1].offset)[0][0]
    assert bad and bad[0]["archive_id"] == first and rep["ok"] is False


def test_open_truncates_interrupted_append(built):
    s, topics, res, folder = built
    size = (folder / "data").stat().st_size
    with open(folder / "data", "ab") as f:
        f.write(b"half an archive")
    f = ArchiveFolder(folder)
    assert f.recovered_bytes == len(b"half an archive")
    assert (folder / "data").stat().st_size == size


def test_open_refuses_index_past_data(built):
    s, topics, res, folder = built
    corrupt_index_past_data(folder, s)
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(folder)
    assert e.value.code == "index-past-data"


def test_verify_missing_path_is_usage_error(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_inspect_lists_archives(built, capsys):
    import json
    s, topics, res, folder = built
    assert main(["inspect", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [a["id"] for a in out["archives"]] == res.new_archive_ids
    assert sum(a["messages"] for a in out["archives"]) == s.messages
    assert main(["inspect", res.torrent_path]) == 0
    assert res.infohash in capsys.readouterr().out
