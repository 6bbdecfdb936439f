"""The control node's archive duties: store live messages, the 7-day schedule, catch-up after being offline,
seeding, announcing and retention. Transports (seeder, announcer, store queries) are injected."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence

from core.archive.build import BuildResult, build_archives, recover_community, torrent_path
from core.archive.codec import ArchiveMessage
from core.archive.constants import PARTITION_SECONDS
from core.node import events as E
from core.node.community import CommunityConfig, NodePaths
from core.node.state import ArchiveSupport
from core.status import payload_v1, topics as status_topics
from core.status.application_metadata import archive_link_envelopes
from core.status.errors import StatusError
from core.storage import waku_messages
from core.storage.archive_state import ArchiveStateDB

log = logging.getLogger(__name__)
RETENTION_SECONDS = 30 * 24 * 3600
CATCH_UP_LIMIT = 30 * 24 * 3600


@dataclass(frozen=True)
class ReceivedWakuMessage:
    """A 14/WAKU2 message as the transport hands it over."""

    content_topic: str
    payload: bytes
    timestamp_ns: int
    hash: bytes


class Seeder(Protocol):
    def seed(self, community_id: str, data_dir, torrent) -> object: ...


Announcer = Callable[[Sequence[tuple[str, bytes]]], None]        # [(content topic, payload-v1 envelope)]
StoreQuery = Callable[[Sequence[str], int, int], Iterable[ReceivedWakuMessage]]   # (content topics, from, to)
Builder = Callable[..., BuildResult]


class ControlNode:
    def __init__(self, cfg: CommunityConfig, paths: NodePaths, state: ArchiveStateDB, bus: E.EventBus,
                 clock, *, seeder: Seeder | None = None, announcer: Announcer | None = None,
                 store_query: StoreQuery | None = None, builder: Builder = build_archives,
                 interval: int = PARTITION_SECONDS, retention: int = RETENTION_SECONDS, group_keys=None):
        self.cfg, self.paths, self.state, self.bus, self.clock = cfg, paths.ensure(), state, bus, clock
        self.seeder, self.announcer, self.store_query, self.builder = seeder, announcer, store_query, builder
        self.interval, self.retention, self.group_keys = interval, retention, group_keys
        self.seeding = None
        self.magnet: str | None = None           # the announced link: a magnet URI, or an index CID (Codex)
        self._codex = None
        self._keep_alive_at = 0.0
        self.announcements = 0
        self._keys = {status_topics.content_topic(c): (c, status_topics.symmetric_key(c))
                      for c in cfg.channel_chat_ids}
        self._messages = waku_messages.connect(paths.messages_db)  # used only on the community's queue
        if state.community_support(cfg.community_id) is None:
            state.set_community_support(cfg.community_id, cfg.archive_support)

    @property
    def cid(self) -> str:
        return self.cfg.community_id

    # -- switches: one state machine --------------------------------------------------------------------------
    def support(self) -> ArchiveSupport:
        if not self.state.community_support(self.cid):
            return ArchiveSupport.OFF
        return ArchiveSupport.ON if self.state.global_archive_support() else ArchiveSupport.DISABLED_GLOBALLY

    def set_support(self, on: bool) -> None:
        self.state.set_community_support(self.cid, on)
        if self.support() is ArchiveSupport.ON:
            self.start()
        else:
            self.stop_seeding()

    # -- live messages -----------------------------------------------------------------------------------
    def store_messages(self, msgs: Iterable[ReceivedWakuMessage]) -> int:
        """Relay/store message -> payload-v1 decrypt -> `waku_messages` row. Returns rows stored."""
        rows = []
        for m in msgs:
            key = self._keys.get(m.content_topic)
            if key is None:
                continue
            try:
                d = payload_v1.decrypt(m.payload, key[1])
            except StatusError as e:
                log.info("dropped undecryptable message on %s: %s", m.content_topic, e)
                continue
            rows.append(ArchiveMessage(d.public_key or b"", m.timestamp_ns // 10 ** 9,
                                       status_topics.status_topic(key[0]), d.data, d.padding, m.hash))
        n = waku_messages.insert_messages(self._messages, rows)
        self._messages.commit()
        return n

    # -- schedule --------------------------------------------------------------------------------------------
    def folder_last_end(self) -> int | None:
        if self.cfg.backend == "codex":
            return self.codex_owner().last_end
        from core.archive.folder import ArchiveFolder
        p = self.paths.archive_dir / self.cid
        return ArchiveFolder(p, index_codec=self._index_codec()).last_end if p.exists() else None

    def next_archive_due(self) -> int | None:
        last = self.folder_last_end()
        if last is None:
            con = waku_messages.connect(self.paths.messages_db)
            try:
                last = waku_messages.oldest_timestamp(con, self.cfg.topics)
            finally:
                con.close()
        return None if last is None else last + self.interval

    def start(self) -> None:
        """Seed what exists, catch up from store nodes, build missed partitions, announce once."""
        if self.support() is not ArchiveSupport.ON:
            return
        if self.cfg.backend == "codex":
            self.magnet = self.codex_owner().index_cid
            self.codex_owner().keep_alive()        # data on Codex expires: store again what is due
        else:
            folder, _ = recover_community(self.paths.archive_dir, self.paths.torrent_dir, self.cid,
                                          self.cfg.trackers, self._index_codec())
            if folder.entries:
                self._seed()
        self.catch_up()
        self.build(announce=False)
        self.announce()  # once per start, whether or not the catch-up made new archives

    def catch_up(self) -> int:
        """Fill `waku_messages` with what store nodes kept while we were away (at most 30 days)."""
        if self.store_query is None:
            return 0
        now = int(self.clock.now())
        start = max(self.folder_last_end() or 0, now - CATCH_UP_LIMIT)
        self.bus.publish(E.WAITING, self.cid, reason=f"catching up missed messages from store nodes since {start}")
        return self.store_messages(self.store_query(list(self._keys), start, now))

    def tick(self) -> BuildResult | None:
        """Called by the engine's timer: build when the next 7-day window is due, then retention."""
        if self.support() is not ArchiveSupport.ON:
            return None
        due = self.next_archive_due()
        res = None
        if due is not None and self.clock.now() >= due:
            res = self.build()
        if self.cfg.backend == "codex" and self.clock.now() - self._keep_alive_at >= 24 * 3600:
            self._keep_alive_at = self.clock.now()
            self.codex_owner().keep_alive()
        self.apply_retention()
        return res

    def codex_owner(self):
        if self._codex is None:
            from core.codex.backend import CodexOwner
            from core.codex.client import CodexClient
            if not self.cfg.codex_api:
                raise ValueError(f"community {self.cid} uses Codex but has no codex_api URL")
            self._codex = CodexOwner(CodexClient(self.cfg.codex_api), self.paths.root / "codex", self.cid,
                                     transform=self._transform(), clock=self.clock.now, interval=self.interval)
        return self._codex

    def _build_codex(self, announce: bool):
        """Seed 002: each archive uploaded on its own; the index CID is the link."""
        owner = self.codex_owner()
        res = owner.publish(self.paths.messages_db, self.cfg.topics, end=int(self.clock.now()))
        if not res.new_archive_ids:
            self.bus.publish(E.NO_HISTORY_ARCHIVES_CREATED, self.cid)
            return res
        self.state.set_last_archive_end(self.cid, max(a["to"] for a in res.archives))
        self.magnet = res.index_cid
        self.bus.publish(E.HISTORY_ARCHIVES_CREATED, self.cid, archives=res.archives, link=res.index_cid)
        self.bus.publish(E.HISTORY_ARCHIVES_SEEDING, self.cid, link=res.index_cid)
        if announce:
            self.announce()
        return res

    def build(self, announce: bool = True) -> BuildResult | None:
        now = int(self.clock.now())
        self.bus.publish(E.CREATING_HISTORY_ARCHIVES, self.cid)
        if self.cfg.backend == "codex":
            return self._build_codex(announce)
        res = self.builder(self.paths.messages_db, self.cid, self.cfg.topics, self.paths.archive_dir,
                           self.paths.torrent_dir, end=now, trackers=self.cfg.trackers, transform=self._transform(),
                           **({"index_codec": self._index_codec()} if self.cfg.encrypted else {}))
        if not res.new_archive_ids:
            self.bus.publish(E.NO_HISTORY_ARCHIVES_CREATED, self.cid)
            return res
        self.state.set_last_archive_end(self.cid, max(a["to"] for a in res.archives))
        self.bus.publish(E.HISTORY_ARCHIVES_CREATED, self.cid, archives=res.archives, magnet=res.magnet)
        self._seed()
        if announce:
            self.announce()
        return res

    def _index_codec(self):
        if not self.cfg.encrypted:
            return None
        from core.status.archive_encryption import index_codec
        from core.status.identity import community_id_bytes
        return index_codec(self.group_keys, community_id_bytes(self.cid))

    def _transform(self):
        """Encrypted communities: each archive is wrapped with the community's current hash-ratchet key."""
        if not self.cfg.encrypted:
            return None
        from core.status.archive_encryption import HashRatchetEncryptor
        from core.status.identity import community_id_bytes
        return HashRatchetEncryptor(self.group_keys, community_id_bytes(self.cid))

    def _seed(self) -> None:
        tpath = torrent_path(self.paths.torrent_dir, self.cid)
        if self.seeder is not None and tpath.exists():
            self.seeding = self.seeder.seed(self.cid, self.paths.archive_dir, tpath)
        from core.archive.torrent import parse_metainfo
        self.magnet = parse_metainfo(tpath.read_bytes()).magnet() if tpath.exists() else None
        self.bus.publish(E.HISTORY_ARCHIVES_SEEDING, self.cid, magnet=self.magnet)

    def close(self) -> None:
        self._messages.close()

    def stop_seeding(self) -> None:
        if self.seeding is not None and hasattr(self.seeding, "stop"):
            self.seeding.stop()
        self.seeding = None
        self.bus.publish(E.HISTORY_ARCHIVES_UNSEEDED, self.cid)

    def announce(self) -> None:
        """Sign the magnet link with the community key and publish it (status-go re-sends on every seed)."""
        if self.magnet is None or self.announcer is None:
            return
        key = self.cfg.identity().private_key
        envs = archive_link_envelopes(key, int(self.clock.now() * 1000), self.magnet, self.cid,
                                      self.cfg.announce_chat_ids())
        self.announcer(envs)
        self.announcements += 1

    def apply_retention(self) -> int:
        """Drop archived messages older than the retention period (never unarchived ones)."""
        last = self.folder_last_end()
        if last is None:
            return 0
        cutoff = min(int(self.clock.now()) - self.retention, last)
        con = waku_messages.connect(self.paths.messages_db)
        try:
            marks = ",".join("?" * len(self.cfg.topics))
            cur = con.execute(f"DELETE FROM waku_messages WHERE timestamp < ? AND topic IN ({marks})",
                              (cutoff, *(waku_messages.topic_text(t) for t in self.cfg.topics)))
            con.commit()
            return cur.rowcount
        finally:
            con.close()
