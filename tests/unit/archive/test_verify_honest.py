"""`archivist verify` says what it checked: without a usable torrent it still decodes and checks every archive,
says `pieces-unchecked` (a failure with --strict), never uses a torrent that is not the folder's, and exits
0 (ok) / 1 (faults) / 2 (unusable input) everywhere."""
import json
import os
import shutil
from pathlib import Path

import pytest

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.torrent import build_metainfo
from core.archive.verify import verify_folder
from core.cli import main
from tests.support import forked

pytestmark = pytest.mark.usefixtures("fork_server")   # stopped after this file: no process left

TOPIC = bytes.fromhex("00eb85a7")
CID2 = "0x03" + "11" * 32


def cli(*args, timeout=60):
    """`archivist ARGS` in a process of its own, forked from the tests' fork server (tests/support/forked.py:
    core.cli.main, its exit code, stdout and stderr) instead of a new interpreter each time."""
    return forked.run_cli(list(args), timeout=timeout)


def first_entry(folder):
    return codec.sorted_entries(codec.decode_index((folder / "index").read_bytes()))[0]


def flip_payload_byte(folder):
    """Change one byte inside a message payload: the archive still decodes, only piece hashes can tell."""
    aid, e = first_entry(folder)
    arch = codec.decode_archive((folder / "data").read_bytes()[e.offset:e.offset + e.raw_size])
    m = arch.messages[0]
    raw = (folder / "data").read_bytes()
    at = raw.index(m.payload, e.offset) + len(m.payload) // 2
    with open(folder / "data", "r+b") as f:
        f.seek(at)
        f.write(bytes([raw[at] ^ 0x55]))
    return aid


def write_folder(folder: Path, archives: list[tuple[int, int, list[ArchiveMessage]]]) -> dict[str, IndexEntry]:
    folder.mkdir(parents=True, exist_ok=True)
    data, entries, off = b"", {}, 0
    for start, end, msgs in archives:
        raw = codec.encode_archive(start, end, [TOPIC], msgs)
        size, pad = codec.padded_size(len(raw))
        e = IndexEntry(start, end, (TOPIC,), off, size, pad)
        entries[e.archive_id] = e
        data += raw + bytes(pad)
        off += size
    (folder / "data").write_bytes(data)
    (folder / "index").write_bytes(codec.encode_index(entries))
    return entries


def msg(ts, h=32):
    return ArchiveMessage(b"\x04" * 65, ts, TOPIC, b"payload", b"", bytes([ts % 256]) * h)


def codes(report):
    return {f.code for f in report.findings}


def test_flipped_payload_byte_without_torrent_is_not_called_verified(built, tmp_path):
    s, topics, res, folder = built
    Path(res.torrent_path).unlink()
    flip_payload_byte(folder)
    p = cli("verify", folder)
    assert p.returncode == 0, p.stdout + p.stderr            # nothing provably wrong ...
    assert "WARNING pieces-unchecked" in p.stdout             # ... and it says what it could not check
    assert "piece hashes NOT checked" in p.stdout.splitlines()[-1]
    assert f"{s.messages} messages checked" in p.stdout       # every archive was still decoded
    p = cli("verify", folder, "--strict")
    assert p.returncode == 1 and "pieces-unchecked" in p.stdout and "FAILED" in p.stdout
    rep = json.loads(cli("verify", folder, "--strict", "--json").stdout)
    assert rep["ok"] is False and rep["pieces_checked"] is False and rep["strict"] is True


def test_flipped_payload_byte_is_caught_by_the_torrent_found_beside(built):
    s, topics, res, folder = built
    flip_payload_byte(folder)
    p = cli("verify", folder)                                 # torrents/<id>.torrent next to archivedata/<id>
    assert p.returncode == 1, p.stdout
    assert "ERROR torrent-piece-mismatch" in p.stdout and "pieces-unchecked" not in p.stdout


def test_clean_folder_with_its_torrent_checks_pieces(built, capsys):
    s, topics, res, folder = built
    assert main(["verify", str(folder), "--strict"]) == 0
    out = capsys.readouterr().out
    assert f"piece hashes checked against {res.torrent_path}" in out and "WARNING" not in out


def test_a_torrent_for_another_folder_is_reported_not_used(built, tmp_path):
    s, topics, res, folder = built
    other = tmp_path / "archivedata" / CID2
    shutil.copytree(folder, other)
    flip_payload_byte(other)
    shutil.copy(res.torrent_path, tmp_path / "torrents" / f"{CID2}.torrent")   # right file name, wrong torrent
    rep = verify_folder(other, discover=True)
    assert rep.ok and rep.torrent is None
    assert {"torrent-not-used", "pieces-unchecked"} <= codes(rep)
    assert "not for this folder" in next(f.message for f in rep.findings if f.code == "torrent-not-used")
    # given explicitly, the same torrent is an error, and still not used for piece hashes
    rep = verify_folder(other, tmp_path / "torrents" / f"{CID2}.torrent")
    assert not rep.ok and "torrent-bad-name" in codes(rep) and "torrent-piece-mismatch" not in codes(rep)


def test_a_folder_name_with_glob_characters_picks_no_torrent(built, tmp_path):
    s, topics, res, folder = built
    star = tmp_path / "archivedata" / "*"
    shutil.copytree(folder, star)
    p = cli("verify", star)
    assert p.returncode == 0 and "pieces-unchecked" in p.stdout and "torrent-piece" not in p.stdout


def test_a_stale_torrent_is_not_used(built):
    s, topics, res, folder = built
    stale = build_metainfo(folder, s.community_id)
    with open(folder / "data", "ab") as f:
        f.write(bytes(102400))
    Path(res.torrent_path).write_bytes(stale)
    rep = verify_folder(folder, discover=True)
    assert "torrent-not-used" in codes(rep) and rep.torrent is None
    rep = verify_folder(folder, res.torrent_path)
    assert "torrent-file-size" in codes(rep) and not rep.ok


@pytest.mark.parametrize("archives,code", [
    ([(100, 200, [msg(150), msg(160, h=31)])], "message-bad-hash"),
    ([(100, 200, [msg(150), msg(250)])], "message-outside-window"),
    ([(100, 200, [])], "archive-empty"),
], ids=["hash", "window", "empty"])
def test_message_level_faults_without_torrent(tmp_path, archives, code):
    folder = tmp_path / CID2
    entries = write_folder(folder, archives)
    rep = verify_folder(folder, discover=True)
    assert code in codes(rep) and not rep.ok
    assert next(f for f in rep.findings if f.code == code).archive_id == next(iter(entries))
    p = cli("verify", folder)
    assert p.returncode == 1 and code in p.stdout


def test_empty_index_with_data_is_an_error(built):
    s, topics, res, folder = built
    (folder / "index").write_bytes(b"")
    rep = verify_folder(folder)
    assert "index-empty" in {f.code for f in rep.findings if f.severity == "error"}
    p = cli("verify", folder)
    assert p.returncode == 1 and "ERROR index-empty" in p.stdout


def test_exit_codes(built, tmp_path):
    s, topics, res, folder = built
    assert cli("verify", tmp_path / "nope").returncode == 2
    (tmp_path / "empty").mkdir()
    p = cli("verify", tmp_path / "empty")
    assert p.returncode == 2 and "not an archive folder" in p.stderr
    for args in (["verify", res.magnet], ["verify", folder, "--torrent", res.magnet], ["inspect", res.magnet]):
        p = cli(*args)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "magnet" in p.stderr, args
        assert "Traceback" not in p.stderr
    p = cli("verify", folder, "--torrent", tmp_path / "missing.torrent")
    assert p.returncode == 2
    os.mkfifo(tmp_path / "fifo")                                   # reading it would block forever
    for cmd in ("verify", "inspect"):
        p = cli(cmd, tmp_path / "fifo", timeout=30)
        assert p.returncode == 2 and "not a regular file" in p.stderr
    assert cli("verify", folder / "data").returncode == 0          # a data file: its folder is verified
    p = cli("verify", res.torrent_path)                            # a torrent: the folder named after it
    assert p.returncode == 0 and f"checked against {res.torrent_path}" in p.stdout
    lonely = tmp_path / "a" / "b" / "lonely"
    lonely.mkdir(parents=True)
    shutil.copy(res.torrent_path, lonely / "x.torrent")
    p = cli("verify", lonely / "x.torrent")                          # no folder to check it against
    assert p.returncode == 2 and "no archive folder named" in p.stderr
