"""Shared helpers for the torrent tests: real archive folders built with core.archive, real services."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from core.archive import codec
from core.archive.build import build_archives
from core.archive.constants import PIECE_LENGTH
from core.archive.torrent import parse_metainfo
from core.synth import synthesize
from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings


@dataclass
class Community:
    community_id: str
    data_dir: Path
    torrent_path: Path
    db: Path
    topics: list[bytes]

    @property
    def folder(self) -> Path:
        return self.data_dir / self.community_id

    @property
    def raw(self) -> bytes:
        return self.torrent_path.read_bytes()

    @property
    def metainfo(self):
        return parse_metainfo(self.raw)

    @property
    def magnet(self) -> str:
        return self.metainfo.magnet()

    def entries(self) -> dict[str, codec.IndexEntry]:
        return codec.decode_index((self.folder / "index").read_bytes())

    def rebuild(self, end: int) -> None:
        """Append newer archives (the control node's weekly tick) and rewrite the torrent."""
        build_archives(self.db, self.community_id, self.topics, self.data_dir, self.torrent_path.parent, end=end)


def make_community(root: Path, *, messages: int = 1500, weeks: int = 6, min_payload: int = 2000,
                   max_payload: int = 6000, seed: int = 1, end: int | None = None) -> Community:
    root.mkdir(parents=True, exist_ok=True)
    syn = synthesize(root / "store.db", messages=messages, weeks=weeks, min_payload=min_payload,
                     max_payload=max_payload, seed=seed)
    topics = [bytes.fromhex(t[2:]) for t in syn.topics]
    res = build_archives(syn.path, syn.community_id, topics, root / "control", root / "torrents",
                         end=end if end is not None else syn.end + 1)
    return Community(syn.community_id, root / "control", Path(res.torrent_path), Path(syn.path), topics)


def sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def piece_slice(path: Path, pieces) -> bytes:
    data = path.read_bytes()
    return b"".join(data[p * PIECE_LENGTH:(p + 1) * PIECE_LENGTH] for p in sorted(pieces))


class Services:
    """Starts loopback services in a test and closes every one of them at teardown."""

    def __init__(self, root: Path):
        self.root = root
        self.started: list[TorrentService] = []

    def __call__(self, name: str, **settings) -> TorrentService:
        s = TorrentService(TorrentSettings.loopback(**settings), self.root / name / "state")
        self.started.append(s.start())
        return s

    def close(self) -> None:
        for s in self.started:
            s.close()
        self.started.clear()
