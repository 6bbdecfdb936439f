"""Which archives a member wants (all, the latest, or those overlapping a time range) and their pieces."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH


@dataclass(frozen=True)
class Selection:
    mode: str = "all"               # "all" | "latest" | "range"
    start: int | None = None        # range: [start, end) in seconds
    end: int | None = None

    def __post_init__(self):
        if self.mode not in ("all", "latest", "range"):
            raise ValueError(f"unknown selection {self.mode!r}")
        if self.mode == "range" and (self.start is None or self.end is None or self.start >= self.end):
            raise ValueError("a time range needs from < to")

    def choose(self, entries: Mapping[str, IndexEntry]) -> list[str]:
        """Archive IDs chosen, in data order."""
        ordered = sorted(entries.items(), key=lambda kv: (kv[1].offset, kv[0]))
        if self.mode == "all":
            return [k for k, _ in ordered]
        if self.mode == "latest":
            if not ordered:
                return []
            latest = max(ordered, key=lambda kv: (kv[1].end, kv[1].offset))
            return [latest[0]]
        return [k for k, e in ordered if e.start < self.end and e.end > self.start]

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
