"""A ControlNode on real SQLite files and a real archive folder, driven by a fake clock (no network: no seeder,
the announcer records what would go out)."""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from core.archive.folder import ArchiveFolder
from core.node import events as E
from core.node.clock import FakeClock
from core.node.community import CommunityConfig, NodePaths
from core.node.control import ControlNode, ReceivedWakuMessage
from core.status.traffic import TrafficGenerator
from core.storage.archive_state import ArchiveStateDB

WEEK = 7 * 24 * 3600
T0 = 1_750_000_000
LATE_EVENT = getattr(E, "LATE_MESSAGES", "archivist.lateHistoryMessages")


def received(msgs) -> list[ReceivedWakuMessage]:
    return [ReceivedWakuMessage(m.content_topic, m.envelope, m.timestamp_ns, m.hash) for m in msgs]


@dataclass
class Owner:
    root: Path
    clock: FakeClock
    gen: TrafficGenerator
    cfg: CommunityConfig
    events: list = field(default_factory=list)
    announced: list = field(default_factory=list)
    node: ControlNode | None = None
    state: ArchiveStateDB | None = None

    @property
    def cid(self) -> str:
        return self.cfg.community_id

    @property
    def paths(self) -> NodePaths:
        return NodePaths(self.root)

    def open(self, **kw) -> ControlNode:
        """(Re)start: a new ControlNode on the same files, as after a process restart."""
        self.close()
        self.paths.ensure()
        self.state = ArchiveStateDB(self.paths.state_db)
        bus = E.EventBus()
        bus.subscribe(self.events.append)
        self.node = ControlNode(self.cfg, self.paths, self.state, bus, self.clock,
                                announcer=self.announced.append, **kw)
        return self.node

    def close(self) -> None:
        if self.node is not None:
            self.node.close()
            self.node = None
        if self.state is not None:
            self.state.close()
            self.state = None

    def store(self, msgs) -> int:
        return self.node.store_messages(received(msgs))

    def folder(self) -> ArchiveFolder:
        return ArchiveFolder(self.paths.archive_dir / self.cid, recover=False)

    def archived(self) -> dict[bytes, tuple[int, int]]:
        """hash -> (from, to) of the archive holding it (decoding every archive in `data`)."""
        f = self.folder()
        out = {}
        for aid, e in f.ordered():
            for m in f.read_archive(aid).messages:
                assert m.hash not in out, "a message is in two archives"
                out[m.hash] = (e.start, e.end)
        return out

    def stored(self) -> set[bytes]:
        con = sqlite3.connect(self.paths.messages_db)
        try:
            return {bytes.fromhex(h[2:]) for (h,) in con.execute("SELECT hash FROM waku_messages")}
        finally:
            con.close()

    def oldest(self) -> int:
        con = sqlite3.connect(self.paths.messages_db)
        try:
            return con.execute("SELECT MIN(timestamp) FROM waku_messages").fetchone()[0]
        finally:
            con.close()

    def names(self) -> list[str]:
        return [e.name for e in self.events]


def owner(tmp_path: Path, seed: int = 11, start: float = T0) -> Owner:
    gen = TrafficGenerator(seed=seed, channels=2, authors=4)
    key = tmp_path / f"community-{seed}.key"
    gen.community.save(key)
    cfg = CommunityConfig(gen.community_id, "Test", "control", [c.chat_id for c in gen.channels], key_file=str(key))
    return Owner(tmp_path / f"owner-{seed}", FakeClock(start), gen, cfg)


def config_error(tmp_path: Path, body: str) -> str:
    """The one sentence of the ConfigError that core.node.config.load raises for a config file of `body` (after a
    data_dir line)."""
    from core.node.config import ConfigError, load
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n{body}')
    try:
        load(config)
    except ConfigError as e:
        return str(e)
    raise AssertionError(f"{body!r} was taken")
