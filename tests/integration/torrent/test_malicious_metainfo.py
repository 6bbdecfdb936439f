"""A peer serving hostile metadata: the member refuses it before a single byte is written.

The hostile torrents are served by a bare libtorrent session in seed mode (no files needed: metadata is sent
from the torrent itself), so the member sees exactly what an attacker would send."""
from __future__ import annotations

import hashlib

import fastbencode
import libtorrent as lt
import pytest

from core.archive.torrent import magnet_link
from core.torrent.selection import Selection
from core.torrent.settings import TorrentSettings

CID = "0x02" + "ab" * 32
PL = 102400


def _info(files, *, name=CID, piece_length=PL):
    total = sum(length for _, length in files)
    n = max(1, -(-total // piece_length))
    return {b"files": [{b"length": length, b"path": path} for path, length in files], b"name": name.encode(),
            b"piece length": piece_length, b"pieces": hashlib.sha1(b"x").digest() * n}


CASES = {
    "path-traversal": (_info([([b"..", b"data"], PL), ([b"index"], 100)]), "torrent-path-traversal"),
    "path-traversal-in-name": (_info([([b"../../data"], PL), ([b"index"], 100)]), "torrent-path-traversal"),
    "extra-files": (_info([([b"data"], PL), ([b"index"], 100), ([b"run.sh"], 100)]), "torrent-bad-files"),
    "huge-index": (_info([([b"data"], PL), ([b"index"], 300 * 1024 * 1024)]), "torrent-bad-size"),
    "over-size-limit": (_info([([b"data"], 400 * PL), ([b"index"], 100)]), "torrent-bad-size"),
    "wrong-piece-length": (_info([([b"data"], 2 * PL), ([b"index"], 100)], piece_length=131072),
                           "torrent-bad-piece-length"),
    "wrong-name": (_info([([b"data"], PL), ([b"index"], 100)], name="0x03" + "cd" * 32), "torrent-bad-name"),
}


@pytest.fixture(scope="module")
def hostile_seeder(tmp_path_factory):
    """One bare session serving every hostile torrent's metadata."""
    ses = lt.session(TorrentSettings.loopback().settings_pack())
    empty = tmp_path_factory.mktemp("hostile")
    magnets = {}
    for case, (info, _) in CASES.items():
        raw = fastbencode.bencode({b"info": info})
        atp = lt.add_torrent_params()
        atp.ti = lt.torrent_info(lt.bdecode(raw))
        atp.save_path = str(empty)
        atp.flags = (atp.flags | lt.torrent_flags.seed_mode) & ~lt.torrent_flags.auto_managed & ~lt.torrent_flags.paused
        ses.add_torrent(atp)
        ih = hashlib.sha1(fastbencode.bencode(info)).hexdigest()
        magnets[case] = magnet_link(ih, CID)     # the magnet names the community the member expects
    yield ses.listen_port(), magnets
    del ses


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_metainfo_refused_before_writing(case, hostile_seeder, services, tmp_path):
    port, magnets = hostile_seeder
    member = services("member", metadata_timeout=15, max_torrent_bytes=300 * PL)
    job = member.fetch(magnets[case], tmp_path / "m", Selection("all"), peers=[("127.0.0.1", port)])
    assert job.wait(30), job.snapshot()
    assert job.state == "error" and job.code == CASES[case][1], job.snapshot()
    assert "refused" in job.message
    assert not any(p.is_file() for p in (tmp_path / "m").rglob("*")), "a byte was written"
    assert not (tmp_path / "data").exists() and not (tmp_path / "member" / "data").exists()
    assert job.infohash not in member.owners


def test_expected_name_comes_from_the_caller_not_the_link(hostile_seeder, services, tmp_path):
    """A magnet whose dn matches its own torrent is still refused when the caller expects another community."""
    port, _ = hostile_seeder
    info = CASES["wrong-name"][0]
    ih = hashlib.sha1(fastbencode.bencode(info)).hexdigest()
    member = services("member", metadata_timeout=15)
    job = member.fetch(magnet_link(ih, info[b"name"].decode()), tmp_path / "m", Selection("all"),
                       community_id=CID, peers=[("127.0.0.1", port)])
    assert job.wait(30) and job.code == "torrent-bad-name"
    assert not any(p.is_file() for p in (tmp_path / "m").rglob("*"))
