"""Piece hashes made archive by archive (the Spark build's executors) or from a prefix of `data` give exactly the
torrent that hashing `data || index` in one pass gives."""
from __future__ import annotations

import os

import pytest

from core.archive.codec import padded_size
from core.archive.constants import PIECE_LENGTH
from core.archive.folder import ArchiveFolder, NewArchive
from core.archive.torrent import archive_piece_hashes, build_metainfo, data_piece_hashes, piece_hashes

CID = "0x02" + "ab" * 32
SIZES = [0, 1, 5000, PIECE_LENGTH - 1, PIECE_LENGTH, PIECE_LENGTH + 1, 2 * PIECE_LENGTH, 3 * PIECE_LENGTH - 7]


@pytest.mark.parametrize("n", SIZES)
def test_an_archive_hashes_alone_as_its_padded_bytes(n):
    raw = os.urandom(n)
    padding = padded_size(n)[1]
    want = piece_hashes([raw, bytes(padding)])
    assert archive_piece_hashes(raw, padding) == want
    assert archive_piece_hashes(memoryview(raw), padding) == want
    assert len(want) == 20 * ((n + padding) // PIECE_LENGTH)


def test_padding_over_a_piece_and_a_ragged_end_are_refused_or_hashed_right():
    raw = os.urandom(PIECE_LENGTH + 3)
    assert archive_piece_hashes(raw, 2 * PIECE_LENGTH - 3) == piece_hashes([raw, bytes(2 * PIECE_LENGTH - 3)])
    with pytest.raises(ValueError, match="whole number"):
        archive_piece_hashes(raw, 10)


def _folder(tmp_path, sizes=(10, PIECE_LENGTH, 3 * PIECE_LENGTH + 11, 2 * PIECE_LENGTH)):
    folder = ArchiveFolder(tmp_path / CID, create=True)
    raws = [os.urandom(n) for n in sizes]
    folder.append([NewArchive(1000 * i, 1000 * i + 1000, (b"\x01\x02\x03\x04",), r) for i, r in enumerate(raws)])
    return folder, raws


def test_archives_pieces_make_the_same_torrent(tmp_path):
    folder, raws = _folder(tmp_path)
    pieces = b"".join(archive_piece_hashes(r, padded_size(len(r))[1]) for r in raws)
    trackers = ["udp://127.0.0.1:1/announce"]
    assert build_metainfo(folder.path, CID, trackers, data_pieces=pieces) == build_metainfo(folder.path, CID, trackers)
    with pytest.raises(ValueError, match="do not describe"):
        build_metainfo(folder.path, CID, data_pieces=pieces[:-20])


def test_a_prefix_of_data_hashes_as_its_archives(tmp_path):
    folder, raws = _folder(tmp_path)
    first_two = sum(padded_size(len(r))[0] for r in raws[:2])
    want = b"".join(archive_piece_hashes(r, padded_size(len(r))[1]) for r in raws[:2])
    assert data_piece_hashes(folder.data_path, first_two) == want
    assert data_piece_hashes(folder.data_path, 0) == b""
    with pytest.raises(ValueError, match="shorter"):
        data_piece_hashes(folder.data_path, folder.described_length + PIECE_LENGTH)
    with pytest.raises(ValueError, match="whole number"):
        data_piece_hashes(folder.data_path, first_two + 1)
    seen = []

    def check():
        seen.append(1)
        if len(seen) == 1:
            raise KeyboardInterrupt   # stands in for a cancel
    with pytest.raises(KeyboardInterrupt):
        data_piece_hashes(folder.data_path, folder.described_length, check)
