from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.torrent.selection import Selection, archive_pieces, index_pieces, piece_bytes

import pytest

W = 7 * 86400


def _entries():
    # three archives: 1, 2 and 3 pieces, weeks 0..3
    e = {}
    offset = 0
    for i, n in enumerate((1, 2, 3)):
        e[f"0x{i}"] = IndexEntry(i * W, (i + 1) * W, (b"abcd",), offset, n * PIECE_LENGTH, 10)
        offset += n * PIECE_LENGTH
    return e


def test_all_latest_range():
    e = _entries()
    assert Selection("all").choose(e) == ["0x0", "0x1", "0x2"]
    assert Selection("latest").choose(e) == ["0x2"]
    assert Selection("range", W - 1, W + 1).choose(e) == ["0x0", "0x1"]
    assert Selection("range", W, 2 * W).choose(e) == ["0x1"]          # [from, to) touching boundaries only
    assert Selection("range", 10 * W, 11 * W).choose(e) == []
    assert Selection("latest").choose({}) == []


def test_pieces_of_chosen_archives():
    e = _entries()
    assert archive_pieces(e, ["0x1"]) == {1, 2}
    assert archive_pieces(e, ["0x0", "0x2"]) == {0, 3, 4, 5}


def test_index_pieces_and_bytes():
    assert list(index_pieces(6 * PIECE_LENGTH, 500)) == [6]
    assert list(index_pieces(6 * PIECE_LENGTH, PIECE_LENGTH + 1)) == [6, 7]
    total = 6 * PIECE_LENGTH + 500
    assert piece_bytes({0, 6}, total) == PIECE_LENGTH + 500
    assert piece_bytes(set(), total) == 0


def test_bad_selections():
    with pytest.raises(ValueError):
        Selection("some")
    with pytest.raises(ValueError):
        Selection("range", 5, 5)
    assert Selection.from_json(Selection("range", 1, 2).to_json()) == Selection("range", 1, 2)
