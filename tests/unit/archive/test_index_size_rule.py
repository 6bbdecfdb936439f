"""One bound on an index file's size (core.archive.constants.MAX_INDEX_BYTES, 64 MiB) for every way an index
arrives: named in a torrent (refused before it is fetched), read from a folder (read_index: inspect, verify, the
node, import, export, hydrate) and fetched from Codex. Before, the three had 256, 64 and 16 MiB: a member fetched a
torrent whose 100 MiB index every later reader refused, and its view then listed no archive."""
from __future__ import annotations

import hashlib

import fastbencode
import pytest

from core.archive.constants import MAX_INDEX_BYTES, PIECE_LENGTH
from core.archive.errors import ArchiveError, InvalidTorrent
from core.archive.inspect import read_index
from core.archive.torrent import parse_metainfo
from core.codex import index as cindex

CID = "0x02" + "ab" * 32


def torrent_naming_an_index_of(index_len: int) -> bytes:
    data_len = PIECE_LENGTH
    n = -(-(data_len + index_len) // PIECE_LENGTH)
    info = {b"files": [{b"length": data_len, b"path": [b"data"]}, {b"length": index_len, b"path": [b"index"]}],
            b"name": CID.encode(), b"piece length": PIECE_LENGTH, b"pieces": hashlib.sha1(b"x").digest() * n}
    return fastbencode.bencode({b"info": info})


def test_a_torrent_may_name_an_index_up_to_the_bound():
    assert parse_metainfo(torrent_naming_an_index_of(MAX_INDEX_BYTES)).file_length("index") == MAX_INDEX_BYTES
    with pytest.raises(InvalidTorrent) as e:
        parse_metainfo(torrent_naming_an_index_of(MAX_INDEX_BYTES + 1))
    assert e.value.code == "torrent-bad-size" and f"index size {MAX_INDEX_BYTES + 1}" in str(e.value)


def test_a_folder_index_up_to_the_bound_is_read(tmp_path):
    p = tmp_path / "index"
    with open(p, "wb") as f:
        f.truncate(MAX_INDEX_BYTES)                    # sparse
    assert len(read_index(p)) == MAX_INDEX_BYTES
    with open(p, "r+b") as f:
        f.truncate(MAX_INDEX_BYTES + 1)
    with pytest.raises(ArchiveError) as e:
        read_index(p)
    assert e.value.code == "index-too-big"


def test_a_codex_index_over_the_bound_is_refused_before_decoding():
    with pytest.raises(ArchiveError) as e:
        cindex.decode_index(bytes(MAX_INDEX_BYTES + 1))
    assert (e.value.code, str(e.value)) == ("index-too-large", f"Codex index of {MAX_INDEX_BYTES + 1} bytes is "
                                            "implausibly large")
    with pytest.raises(ArchiveError) as e:             # at the bound it is read on (and found to list too many)
        cindex.decode_index(b"\x0a\x00" * (MAX_INDEX_BYTES // 2))
    assert str(e.value) == "index lists more than 262144 archives (not a real index)"
