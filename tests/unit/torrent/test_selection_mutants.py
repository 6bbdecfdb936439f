"""Which archives a member wants (core/torrent/selection.py): every boundary and sentence, each pinned by a test
that fails when it moves (written against the survivors of `make mutation`, docs/QUALITY.md)."""
from __future__ import annotations

import argparse

import pytest

from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.torrent.selection import (Selection, add_selection_arguments, archive_pieces, index_pieces, parse_when,
                                    piece_bytes, selection_from_args)

W = 7 * 86400


def _e(start, end, offset, pieces=1):
    return IndexEntry(start, end, (b"abcd",), offset * PIECE_LENGTH, pieces * PIECE_LENGTH, 10)


def test_bad_selections_say_why():
    with pytest.raises(ValueError, match=r"^unknown selection 'some'$"):
        Selection("some")
    for start, end in ((5, 5), (6, 5), (None, 5), (5, None), (None, None)):
        with pytest.raises(ValueError, match=r"^a time range needs from < to$"):
            Selection("range", start, end)
    assert Selection("range", 4, 5).end == 5
    assert Selection("all", None, None).mode == "all" and Selection().mode == "all"
    assert Selection("latest", 7, 3).start == 7          # a window is only checked for ranges


def test_latest_is_every_chunk_of_the_newest_window_by_end_then_start():
    # two chunks of [W, 2W); a window [W+1, 2W) ends at the same time but starts later; an older window
    e = {"old": _e(0, W, 0), "c1": _e(W, 2 * W, 1), "c2": _e(W, 2 * W, 2), "late": _e(W + 1, 2 * W, 3)}
    assert Selection("latest").choose(e) == ["late"]
    del e["late"]
    assert Selection("latest").choose(e) == ["c1", "c2"]
    e["longer"] = _e(0, 3 * W, 4)
    assert Selection("latest").choose(e) == ["longer"]


def test_range_is_half_open_on_both_sides():
    e = {"a": _e(0, W, 0), "b": _e(W, 2 * W, 1), "c": _e(2 * W, 3 * W, 2)}
    assert Selection("range", W, 2 * W).choose(e) == ["b"]
    assert Selection("range", W - 1, W).choose(e) == ["a"]
    assert Selection("range", 2 * W - 1, 2 * W + 1).choose(e) == ["b", "c"]
    assert Selection("range", 3 * W, 4 * W).choose(e) == []
    assert Selection("all").choose(e) == ["a", "b", "c"]


def test_a_range_touching_one_chunk_takes_its_whole_window():
    e = {"a1": _e(0, W, 0), "a2": _e(0, W, 1), "b": _e(W, 2 * W, 2)}
    assert Selection("range", 0, 1).choose(e) == ["a1", "a2"]


def test_json_round_trip_and_defaults():
    assert Selection("range", 1, 2).to_json() == {"mode": "range", "from": 1, "to": 2}
    assert Selection.from_json({}) == Selection("all")
    assert Selection.from_json({"mode": "latest"}) == Selection("latest")
    assert Selection.from_json({"mode": "range", "from": 3, "to": 9}) == Selection("range", 3, 9)


def test_piece_arithmetic():
    assert list(index_pieces(0, 1)) == [0]
    assert list(index_pieces(3 * PIECE_LENGTH, PIECE_LENGTH)) == [3]
    assert list(index_pieces(3 * PIECE_LENGTH, 2 * PIECE_LENGTH + 1)) == [3, 4, 5]
    assert list(index_pieces(3 * PIECE_LENGTH, 0)) == []
    e = {"a": _e(0, W, 0, 2), "b": _e(W, 2 * W, 2, 3)}
    assert archive_pieces(e, []) == set() and archive_pieces(e, ["b"]) == {2, 3, 4}
    total = 3 * PIECE_LENGTH + 7
    assert piece_bytes({3}, total) == 7
    assert piece_bytes(range(4), total) == 3 * PIECE_LENGTH + 7
    assert piece_bytes({0, 1}, total) == 2 * PIECE_LENGTH
    assert piece_bytes({2}, 3 * PIECE_LENGTH) == PIECE_LENGTH     # an exact multiple: the last piece is whole


def test_parse_when_reads_seconds_and_iso_dates_utc_by_default():
    assert parse_when("0") == 0 and parse_when("1700000000") == 1_700_000_000
    assert parse_when("2026-11-23") == 1_795_392_000
    assert parse_when("2026-11-23T01:00:00") == 1_795_392_000 + 3600
    assert parse_when("2026-11-23T01:00:00+01:00") == 1_795_392_000
    with pytest.raises(argparse.ArgumentTypeError) as ei:
        parse_when("-5")
    assert str(ei.value) == "'-5' is neither unix seconds nor an ISO date"
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'yesterday' is neither unix seconds nor an ISO date$"):
        parse_when("yesterday")


def test_a_date_without_zone_is_utc_whatever_the_local_zone(monkeypatch):
    import time
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse_when("2026-11-23T00:00:00") == 1_795_392_000
        assert parse_when("2026-11-23") == 1_795_392_000 and parse_when("2026-11-23", until=True) == 1_795_478_400
    finally:
        monkeypatch.undo()
        time.tzset()


def _args(*argv):
    p = argparse.ArgumentParser(exit_on_error=False)
    add_selection_arguments(p)
    return p.parse_args(list(argv))


def test_flags_give_one_selection():
    assert selection_from_args(_args()) == Selection("all")
    assert selection_from_args(_args("--all")) == Selection("all")
    assert selection_from_args(_args("--latest")) == Selection("latest")
    assert selection_from_args(_args("--from", "10", "--to", "2026-11-23")) == Selection("range", 10, 1_795_478_400)
    assert selection_from_args(argparse.Namespace(start=None, end=None)) == Selection("all")
    assert selection_from_args(argparse.Namespace(start=1, end=2)) == Selection("range", 1, 2)   # no --all flag
    with pytest.raises(ValueError, match=r"^--from/--to cannot be combined with --all/--latest$"):
        selection_from_args(_args("--latest", "--from", "1", "--to", "2"))
    with pytest.raises(ValueError, match=r"^--from/--to cannot be combined with --all/--latest$"):
        selection_from_args(_args("--all", "--to", "2"))
    for argv in (("--from", "1"), ("--to", "2")):
        with pytest.raises(ValueError, match=r"^a time range needs both --from and --to$"):
            selection_from_args(_args(*argv))
    with pytest.raises(argparse.ArgumentError, match="not allowed with argument"):
        _args("--all", "--latest")


def test_flag_help_texts():
    p = argparse.ArgumentParser(prog="x")
    add_selection_arguments(p)
    text = " ".join(p.format_help().split())
    for part in ("--all every archive (default)", "--latest the newest 7-day window (all its archives)",
                 "--from START with --to: archives overlapping [from, to)", "--to END"):
        assert part in text


def test_a_date_as_the_end_of_a_range_includes_that_whole_day():
    """One meaning with the member view's date fields (gui/views/member.to_ts): `--to 2026-11-23` ends at the next
    midnight; a time or seconds stay exact."""
    from core.torrent.selection import parse_until
    assert parse_until("2026-11-23") == 1_795_392_000 + 86400
    assert parse_until("2026-11-23T00:00:00") == 1_795_392_000
    assert parse_until("2026-11-23T12:00:00+00:00") == 1_795_392_000 + 12 * 3600
    assert parse_until("1795392000") == 1_795_392_000
    a = _args("--from", "2026-11-17", "--to", "2026-11-23")
    assert selection_from_args(a) == Selection("range", 1_795_392_000 - 6 * 86400, 1_795_392_000 + 86400)
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'2026-13-01' is neither unix seconds nor an ISO date$"):
        parse_until("2026-13-01")


def test_the_help_says_what_a_date_means():
    p = argparse.ArgumentParser(exit_on_error=False)
    add_selection_arguments(p)
    text = " ".join(p.format_help().split())
    assert "with --to: archives overlapping [from, to); unix seconds or an ISO date (UTC)" in text
    assert text.endswith("--to END a date includes that whole day (UTC); seconds or a time are an exclusive end")
