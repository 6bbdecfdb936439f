""""Windows start at the end of the last archive, else at the oldest stored message": one rule
(core.archive.partition.missing_windows) for the local build, the Spark build's plan, the Codex backend and the
control node's schedule. Before, each of three places wrote it out itself."""
from __future__ import annotations

import pytest

from core.archive.partition import missing_windows, windows_start

WEEK = 7 * 86400


def never() -> int:
    raise AssertionError("the store was asked for its oldest message although an archive exists")


def test_the_last_archive_end_wins_and_the_store_is_not_asked():
    assert windows_start(1000, never) == 1000
    assert missing_windows(1000, never, 1000 + 2 * WEEK + 5) == (
        1000, [(1000, 1000 + WEEK), (1000 + WEEK, 1000 + 2 * WEEK), (1000 + 2 * WEEK, 1000 + 2 * WEEK + 5)])


def test_without_an_archive_windows_start_at_the_oldest_message():
    assert windows_start(None, lambda: 77) == 77
    assert missing_windows(None, lambda: 77, 77 + WEEK) == (77, [(77, 77 + WEEK)])


def test_an_explicit_start_overrides_both():
    assert missing_windows(1000, never, 500 + WEEK, start=500) == (500, [(500, 500 + WEEK)])


@pytest.mark.parametrize("last_end, oldest, end", [(None, None, 10 ** 9), (2000, 0, 2000), (3000, 0, 2000),
                                                   (None, 2000, 2000)])
def test_nothing_to_build(last_end, oldest, end):
    start, windows = missing_windows(last_end, lambda: oldest, end)
    assert windows == [] and start == (last_end if last_end is not None else oldest)


def test_the_interval_is_the_callers():
    assert missing_windows(0, never, 25, interval=10) == (0, [(0, 10), (10, 20), (20, 25)])
    with pytest.raises(ValueError, match="interval must be positive"):
        missing_windows(0, never, 25, interval=0)
