import hashlib

import fastbencode

from core.archive.build import build_archives
from core.archive.constants import PIECE_LENGTH
from core.archive.folder import ArchiveFolder
from core.archive.torrent import parse_metainfo
from core.archive.verify import verify_folder


def _bencode(v) -> bytes:
    """An independent bencoder, written here so the test does not trust the code under test."""
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, str):
        return _bencode(v.encode())
    if isinstance(v, list):
        return b"l" + b"".join(_bencode(x) for x in v) + b"e"
    if isinstance(v, dict):
        items = sorted((k.encode() if isinstance(k, str) else k, x) for k, x in v.items())
        return b"d" + b"".join(_bencode(k) + _bencode(x) for k, x in items) + b"e"
    raise TypeError(v)


def test_torrent_info_dict_and_infohash(built):
    s, topics, res, folder = built
    raw = open(res.torrent_path, "rb").read()
    meta = fastbencode.bdecode(raw)
    info = meta[b"info"]
    assert sorted(info) == [b"files", b"name", b"piece length", b"pieces"]
    assert [f[b"path"] for f in info[b"files"]] == [[b"data"], [b"index"]]
    assert info[b"name"] == s.community_id.encode() and info[b"piece length"] == PIECE_LENGTH
    data, index = (folder / "data").read_bytes(), (folder / "index").read_bytes()
    blob = data + index
    pieces = b"".join(hashlib.sha1(blob[i:i + PIECE_LENGTH]).digest() for i in range(0, len(blob), PIECE_LENGTH))
    mine = {"files": [{"length": len(data), "path": ["data"]}, {"length": len(index), "path": ["index"]}],
            "name": s.community_id, "piece length": PIECE_LENGTH, "pieces": pieces}
    assert hashlib.sha1(_bencode(mine)).hexdigest() == res.infohash
    assert b"announce" not in meta  # empty announce-list allowed (private/loopback setups)
    assert res.magnet == f"magnet:?xt=urn:btih:{res.infohash}&dn={s.community_id}"


def test_trackers_one_per_tier(tmp_path, community):
    s, topics = community
    trackers = ["udp://tracker.opentrackr.org:1337/announce", "udp://tracker.openbittorrent.com:6969/announce"]
    res = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end, trackers=trackers)
    meta = fastbencode.bdecode(open(res.torrent_path, "rb").read())
    assert meta[b"announce-list"] == [[t.encode()] for t in trackers]
    assert res.magnet.endswith("&tr=udp%3A%2F%2Ftracker.opentrackr.org%3A1337%2Fannounce"
                               "&tr=udp%3A%2F%2Ftracker.openbittorrent.com%3A6969%2Fannounce")


def test_same_database_twice_gives_identical_bytes(tmp_path, community):
    s, topics = community
    outs = []
    for run in ("a", "b"):
        res = build_archives(s.path, s.community_id, topics, tmp_path / run / "d", tmp_path / run / "t", end=s.end)
        f = tmp_path / run / "d" / s.community_id
        outs.append(((f / "data").read_bytes(), (f / "index").read_bytes(), res.infohash,
                     open(res.torrent_path, "rb").read()))
    assert outs[0] == outs[1]


def test_second_build_appends_and_keeps_earlier_bytes_and_pieces(tmp_path, community):
    s, topics = community
    mid = s.start + 3 * 7 * 86400 + 1234
    r1 = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=mid)
    folder = tmp_path / "d" / s.community_id
    data1 = (folder / "data").read_bytes()
    pieces1 = parse_metainfo(open(r1.torrent_path, "rb").read()).pieces
    r2 = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end)
    data2 = (folder / "data").read_bytes()
    assert r1.new_archive_ids and r2.new_archive_ids and not set(r1.new_archive_ids) & set(r2.new_archive_ids)
    assert data2[:len(data1)] == data1
    n_data_pieces = len(data1) // PIECE_LENGTH
    pieces2 = parse_metainfo(open(r2.torrent_path, "rb").read()).pieces
    assert pieces2[:20 * n_data_pieces] == pieces1[:20 * n_data_pieces]
    # the second build starts where the first ended
    entries = ArchiveFolder(folder).entries
    assert min(entries[a].start for a in r2.new_archive_ids) == max(entries[a].end for a in r1.new_archive_ids) == mid
    # a third build with nothing new adds nothing
    r3 = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end)
    assert r3.new_archive_ids == [] and r3.infohash == r2.infohash
    assert verify_folder(folder, r2.torrent_path).ok


def test_every_message_archived_once_in_window(built):
    s, topics, res, folder = built
    f = ArchiveFolder(folder)
    total = 0
    for aid, e in f.ordered():
        arch = f.read_archive(aid)
        assert arch.topics == tuple(topics)  # the community's whole topic list
        assert all(e.start <= m.timestamp < e.end for m in arch.messages)
        assert [(m.timestamp, m.hash) for m in arch.messages] == sorted((m.timestamp, m.hash) for m in arch.messages)
        total += len(arch.messages)
    assert total == s.messages == res.messages


def test_synth_is_deterministic(tmp_path):
    from core.synth import synthesize
    a = synthesize(tmp_path / "a.sqlite", messages=500, weeks=2, seed=3)
    b = synthesize(tmp_path / "b.sqlite", messages=500, weeks=2, seed=3)
    c = synthesize(tmp_path / "c.sqlite", messages=500, weeks=2, seed=4)
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    assert a.community_id == b.community_id != c.community_id


def test_disk_full_refused_before_writing(tmp_path, community):
    import pytest
    from core.archive.errors import ArchiveError
    s, topics = community
    with pytest.raises(ArchiveError) as e:
        build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end,
                       free_space=lambda p: 16 * 1024 * 1024 + 100_000)
    assert e.value.code == "disk-full" and "iB free" in str(e.value)
    folder = tmp_path / "d" / s.community_id
    assert not (folder / "data").exists() and not (folder / "index").exists()
    assert not (tmp_path / "t").exists()
