"""Which archives a member wants (all, the latest, or those overlapping a time range) and their pieces."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Mapping

from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH


MODES = ("all", "latest", "range")     # what a member may choose: every reader of a policy takes these codes


@dataclass(frozen=True)
class Selection:
    mode: str = "all"               # "all" | "latest" | "range"
    start: int | None = None        # range: [start, end) in seconds
    end: int | None = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown selection {self.mode!r}")
        if self.mode == "range" and (self.start is None or self.end is None or self.start >= self.end):
            raise ValueError("a time range needs from < to")

    def choose(self, entries: Mapping[str, IndexEntry]) -> list[str]:
        """Archive IDs chosen, in data order, always whole windows (core.history_import.whole_windows): "latest" is
        every chunk of the newest window, a range every chunk of each window it touches."""
        from core.history_import import whole_windows
        if self.mode == "all":
            picked = list(entries)
        elif self.mode == "latest":
            newest = max(((e.end, e.start) for e in entries.values()), default=None)
            picked = [k for k, e in entries.items() if (e.end, e.start) == newest]
        else:
            picked = [k for k, e in entries.items() if e.start < self.end and e.end > self.start]
        return whole_windows(entries, picked)

    def to_json(self) -> dict:
        return {"mode": self.mode, "from": self.start, "to": self.end}

    @classmethod
    def from_json(cls, d: Mapping) -> "Selection":
        return cls(d.get("mode", "all"), d.get("from"), d.get("to"))


def index_pieces(data_len: int, index_len: int) -> range:
    """`data` is a multiple of the piece length, so the index starts on a piece boundary."""
    first = data_len // PIECE_LENGTH
    return range(first, first + -(-index_len // PIECE_LENGTH))


def archive_pieces(entries: Mapping[str, IndexEntry], chosen: list[str]) -> set[int]:
    out: set[int] = set()
    for aid in chosen:
        out.update(entries[aid].pieces)
    return out


def piece_bytes(pieces: set[int] | range, total_length: int) -> int:
    """Payload bytes of `pieces` (the last piece of the torrent may be short)."""
    last = -(-total_length // PIECE_LENGTH) - 1
    tail = total_length - last * PIECE_LENGTH
    return sum(tail if p == last else PIECE_LENGTH for p in pieces)


DAY_SECONDS = 86400


def day_start(day: dt.date) -> int:
    """The first second of a UTC calendar day."""
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp())


def day_end(day: dt.date) -> int:
    """The exclusive end of a UTC calendar day (the next midnight): a range that ends on a date includes that day,
    on the command line (`--to 2026-11-07`) as in the member view's date fields."""
    return day_start(day) + DAY_SECONDS


def parse_when(s: str, *, until: bool = False) -> int:
    """Unix seconds, or an ISO date or date and time (UTC unless it says otherwise). A date alone is that whole UTC
    day: its first second, or with `until` its end (day_end), so `--from 2026-11-01 --to 2026-11-07` is seven
    days. Seconds and times are exact (an exclusive end)."""
    import argparse
    if s.isdigit():
        return int(s)
    try:
        day = dt.date.fromisoformat(s)
    except ValueError:
        pass
    else:
        return day_end(day) if until else day_start(day)
    try:
        t = dt.datetime.fromisoformat(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is neither unix seconds nor an ISO date") from None
    return int((t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)).timestamp())


def parse_until(s: str) -> int:
    """parse_when for the end of a range (`--to`)."""
    return parse_when(s, until=True)


def add_selection_arguments(p) -> None:
    """--all | --latest | --from S --to S: one meaning for fetch, codex-fetch, import and spark-hydrate."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--all", dest="mode", action="store_const", const="all", help="every archive (default)")
    g.add_argument("--latest", dest="mode", action="store_const", const="latest",
                   help="the newest 7-day window (all its archives)")
    p.add_argument("--from", dest="start", type=parse_when,
                   help="with --to: archives overlapping [from, to); unix seconds or an ISO date (UTC)")
    p.add_argument("--to", dest="end", type=parse_until,
                   help="a date includes that whole day (UTC); seconds or a time are an exclusive end")


def selection_from_args(a) -> Selection:
    """The Selection of add_selection_arguments' flags; ValueError with a sentence on a bad combination."""
    if a.start is not None or a.end is not None:
        if getattr(a, "mode", None):
            raise ValueError("--from/--to cannot be combined with --all/--latest")
        if a.start is None or a.end is None:
            raise ValueError("a time range needs both --from and --to")
        return Selection("range", a.start, a.end)
    return Selection(getattr(a, "mode", None) or "all")
