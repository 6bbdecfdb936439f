"""Inputs the fuzzer found that crashed a decoder, kept as plain tests (each failed before its fix)."""
import pytest

from core.archive import codec
from core.archive.codec import IndexEntry
from core.archive.errors import InvalidTorrent
from core.archive.torrent import parse_metainfo
from tests.fuzz.targets import BODY, _link_world, link_envelope, run_archive_link, run_index


def test_link_clock_beyond_sqlite_integers_is_rejected_not_a_crash():
    """A type-43 body whose clock is 2^64-1, correctly signed by the community key: the gate stored it in SQLite
    and died with OverflowError. Now the decoder refuses the clock."""
    from core.pb import communities_archive_pb2 as archive_pb
    body = archive_pb.CommunityMessageArchiveMagnetlink(clock=(1 << 64) - 1, magnet_uri="magnet:?xt=urn:btih:"
                                                        + "ab" * 20).SerializeToString()
    assert run_archive_link((BODY, body)) == "malformed"
    *_, gate = _link_world()
    assert gate.db.rejections(gate.community_id).get("malformed", 0) >= 1
    from core.status.application_metadata import open_archive_link_envelope
    from core.status.errors import MessageDecodeError
    _, _, cid, chat, _, _ = _link_world()
    with pytest.raises(MessageDecodeError) as e:
        open_archive_link_envelope(link_envelope(BODY, body), chat, cid)
    assert e.value.code == "bad-clock"


@pytest.mark.parametrize("where", [b"piece length", b"length", b"path"])
def test_deeply_nested_torrent_values_give_invalid_torrent(where):
    """A 5000-deep list as a torrent value: building the error message's repr raised RecursionError."""
    import fastbencode
    deep = v = []
    for _ in range(5000):
        v.append([])
        v = v[0]
    files = [{b"length": 102400, b"path": [b"data"]}, {b"length": 10, b"path": [b"index"]}]
    info = {b"name": b"0x" + b"02" * 33, b"piece length": 102400, b"files": files, b"pieces": bytes(40)}
    if where == b"piece length":
        info[where] = deep
    else:
        files[0][where] = deep
    with pytest.raises(InvalidTorrent):
        parse_metainfo(fastbencode.bencode({b"info": info}))


def test_inspector_peer_with_unicode_digits_is_ignored():
    """`"²".isdigit()` is true but int("²") raises: a magnet link's x.pe=host:² crashed the Inspector's fetch."""
    from core.torrent.magnet import parse_peer as _peer
    assert _peer("h:\u00b2") is None and _peer("h:\u0663") is None and _peer("h:0") is None
    assert _peer("h:70000") is None and _peer("[::1]:6881") == ("::1", 6881)


def test_entry_with_metadata_version_keeps_the_id_of_its_fields():
    """An entry whose metadata carries `version` (IndexEntry does not keep it): the cached ID differed from the
    ID of the same entry rebuilt, so an index could check differently depending on how it was made."""
    from core.pb import communities_archive_pb2 as pb
    e = IndexEntry(1579651200, 0, (b"\x00\xeb\x85\xa7",), 614400, 512000, 61928)
    v = e.to_pb()
    v.metadata.version = 1580256000
    idx = pb.WakuMessageArchiveIndex()
    idx.archives[e.archive_id].CopyFrom(v)
    assert run_index(idx.SerializeToString()) in ("ok", "faults")
    got = next(iter(codec.decode_index(idx.SerializeToString()).values()))
    assert got.archive_id == e.archive_id


@pytest.mark.parametrize("where", ["&tr=http://a\udc80b/announce", "&dn=0x\udc80", "&x.pe=1.2.3.4\udc80:5"])
def test_magnet_with_a_lone_surrogate_is_a_magnet_error(where):
    """Text with a lone surrogate (a mis-decoded clipboard or file) reached libtorrent's tracker list and raised
    UnicodeEncodeError, which the fuzz targets let through as 'a ValueError'. Now the one parser refuses it."""
    from core.torrent.fetch import parse_magnet as fetch_parse
    from core.torrent.magnet import MagnetError, parse_magnet
    link = "magnet:?xt=urn:btih:" + "06cdef495dc46b0335c90ecd55c877e2bad3706c" + "&dn=0x02" + "00" * 32 + where
    for parse in (fetch_parse, parse_magnet):
        with pytest.raises(MagnetError, match="not valid text"):
            parse(link)
