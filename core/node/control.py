"""The control node's archive duties: store live messages, the 7-day schedule (whole windows only, closed a grace
period before they are built), catch-up after being offline, seeding, announcing, retention that deletes only
what is provably archived, and counting late messages. Transports (seeder, announcer, store queries) are injected."""
from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence

from core.archive.build import BuildResult, build_archives, recover_community, torrent_path
from core.archive.constants import DATA_FILE, INDEX_FILE, PARTITION_SECONDS
from core.archive.errors import ArchiveError, CorruptFolder, DecodeError
from core.archive.partition import windows_start
from core.node import events as E
from core.node.archived import ArchivedWindow
from core.node.community import GRACE_SECONDS, RETENTION_SECONDS, STORE_LOOKBACK_S, CommunityConfig, NodePaths
from core.node.jobs import (OFFLOAD_BATCH, archive_crypto, build_job, decode_received, torrent_window_ids,
                            window_ids)
from core.node.state import ArchiveSupport
from core.status import topics as status_topics
from core.status.application_metadata import archive_link_envelopes
from core.storage import waku_messages
from core.storage.archive_state import ArchiveStateDB

log = logging.getLogger(__name__)
CATCH_UP_LIMIT = STORE_LOOKBACK_S
BUILD_RETRY_SECONDS = 600     # after a failed scheduled build (e.g. disk full)
RETENTION_RETRY_SECONDS = 3600   # after retention refused to delete anything (index cannot be read or checked)
EARLIEST = -(1 << 62)


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


def _one_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class ControlNode:
    def __init__(self, cfg: CommunityConfig, paths: NodePaths, state: ArchiveStateDB, bus: E.EventBus,
                 clock, *, seeder: Seeder | None = None, announcer: Announcer | None = None,
                 store_query: StoreQuery | None = None, builder: Builder = build_archives,
                 interval: int = PARTITION_SECONDS, retention: int = RETENTION_SECONDS, group_keys=None,
                 grace: int | None = None, offload=None):
        self.cfg, self.paths, self.state, self.bus, self.clock = cfg, paths.ensure(), state, bus, clock
        self.offload = offload                   # core.node.offload.Offloader: build, proof, decoding in a worker
        self.seeder, self.announcer, self.store_query, self.builder = seeder, announcer, store_query, builder
        self.interval, self.retention, self.group_keys = interval, retention, group_keys
        self.grace = int(grace if grace is not None else GRACE_SECONDS)   # [node] grace_period arrives as grace
        self.seeding = None
        self.magnet: str | None = None           # the announced link: a magnet URI, or an index CID (Codex)
        self.broken: str | None = None           # "code: reason" when the folder cannot be trusted: nothing runs
        self._codex = None
        self._keep_alive_at = 0.0
        self._scheduled_through: int | None = None    # the last scheduled build covered windows up to here
        self._retry_at = 0.0
        self._retention_hold = 0.0               # after a refusal, retention waits (one log line, not one a tick)
        self._end_cache: tuple = (None, None)
        self._late: dict[bytes, tuple[int, tuple[int, int]]] = {}   # hash -> (timestamp, window)
        self._unproven: dict[bytes, int] = {}     # kept because their archive could not be proven (hash -> ts)
        self._ids_cache: OrderedDict = OrderedDict()
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
        """Relay/store message -> payload-v1 decrypt -> `waku_messages` row. Returns rows stored. A new row older
        than the last archive's end is checked against the archives: if it is in none, it is a late message."""
        msgs = list(msgs)
        if self._offloading() and len(msgs) >= OFFLOAD_BATCH:     # a store catch-up: decoded in a worker
            rows = self.offload.run(decode_received, self._keys, [ReceivedWakuMessage(
                m.content_topic, m.payload, m.timestamp_ns, m.hash) for m in msgs])
        else:
            rows = decode_received(self._keys, msgs)
        end = self._safe_last_end() if rows else None
        old = [r for r in rows if end is not None and r.timestamp < end]
        present = waku_messages.existing_hashes(self._messages, [r.hash for r in old]) if old else set()
        n = waku_messages.insert_messages(self._messages, rows)
        self._messages.commit()
        fresh = [r.timestamp for r in old if r.hash not in present]
        if fresh:
            self._classify(min(fresh), max(fresh) + 1)
        return n

    # -- schedule --------------------------------------------------------------------------------------------
    def folder_last_end(self) -> int | None:
        """End of the newest archive. Reads the index only (never repairs: a build may be appending right now)."""
        if self.cfg.backend == "codex":
            return self.codex_owner().last_end
        from core.archive.folder import ArchiveFolder
        p = self.paths.archive_dir / self.cid
        try:
            st = (p / INDEX_FILE).stat()
        except FileNotFoundError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._end_cache[0] != stamp:
            self._end_cache = (stamp, ArchiveFolder(p, recover=False, index_codec=self._index_codec()).last_end)
        return self._end_cache[1]

    def _safe_last_end(self) -> int | None:
        try:
            return None if self.broken else self.folder_last_end()
        except ArchiveError:
            return None

    def _base(self) -> int | None:
        """Where windows start (core.archive.partition.windows_start)."""
        return windows_start(self.folder_last_end(), self._oldest_stored)

    def _oldest_stored(self) -> int | None:
        con = waku_messages.connect(self.paths.messages_db)   # own connection: the GUI asks from its thread
        try:
            return waku_messages.oldest_timestamp(con, self.cfg.topics)
        finally:
            con.close()

    def whole_windows_end(self) -> int | None:
        """End of the last whole window that closed at least `grace` seconds ago, or None if none did."""
        base = self._base()
        if base is None:
            return None
        k = (int(self.clock.now()) - self.grace - base) // self.interval
        return base + k * self.interval if k >= 1 else None

    def next_archive_due(self) -> int | None:
        """When the next whole window has closed plus the grace period (None: nothing to archive, or broken)."""
        try:
            base = None if self.broken else self._base()
        except ArchiveError:
            return None
        return None if base is None else max(base, self._scheduled_through or base) + self.interval + self.grace

    def start(self) -> None:
        """Seed what exists, catch up from store nodes, build the missed whole windows, announce once.

        A folder that cannot be trusted (damaged index, ...) stops everything for this community: one E.ERROR
        with its code and reason; nothing is built, seeded, announced or deleted."""
        if self.support() is not ArchiveSupport.ON:
            return
        self.broken = None
        self._unproven.clear()
        try:
            prev_end = self._recover_and_seed()
        except ArchiveError as e:
            self._refuse(e)
            return
        self.catch_up()
        try:
            self._build_due(announce=False)
        except ArchiveError as e:
            if self._build_failed(e):
                return
        if prev_end is not None:
            self._classify(None, prev_end)         # late messages for windows archived by an earlier run
        due = self.next_archive_due()
        if due is not None:
            self.bus.publish(E.WAITING, self.cid, until=due, reason=f"next archive due at {due}: the current "
                             f"7-day window closes, plus {self.grace} s for late messages")
        self.announce()  # once per start, whether or not the catch-up made new archives

    def _recover_and_seed(self) -> int | None:
        if self.cfg.backend == "codex":
            owner = self.codex_owner()
            self.magnet = owner.index_cid
            owner.keep_alive()                     # data on Codex expires: store again what is due
            return owner.last_end
        folder, _ = recover_community(self.paths.archive_dir, self.paths.torrent_dir, self.cid,
                                      self.cfg.trackers, self._index_codec())
        if folder.entries:
            self._seed()
        return folder.last_end

    def _refuse(self, e: ArchiveError) -> None:
        line = _one_line(e)
        self.broken = f"{e.code}: {line}"
        log.error("%s: archive folder cannot be trusted, nothing is built, seeded, announced or deleted: %s",
                  self.cid, self.broken)
        if self.seeding is not None:
            self.stop_seeding()
        self.bus.publish(E.ERROR, self.cid, code=e.code, message=line)

    def _build_failed(self, e: ArchiveError) -> bool:
        """A damaged folder stops the community (True); anything else (disk full) is retried later."""
        if isinstance(e, (CorruptFolder, DecodeError)):
            self._refuse(e)
            return True
        self._retry_at = self.clock.now() + BUILD_RETRY_SECONDS
        log.error("%s: archive build failed, retrying in %d s: %s: %s", self.cid, BUILD_RETRY_SECONDS, e.code, e)
        self.bus.publish(E.ERROR, self.cid, code=e.code, message=_one_line(e))
        return False

    def catch_up(self) -> int:
        """Fill `waku_messages` with what store nodes kept while we were away (at most 30 days)."""
        if self.store_query is None:
            return 0
        now = int(self.clock.now())
        start = max(self.folder_last_end() or 0, now - CATCH_UP_LIMIT)
        self.bus.publish(E.WAITING, self.cid, reason=f"catching up missed messages from store nodes since {start}")
        return self.store_messages(self.store_query(list(self._keys), start, now))

    def tick(self) -> BuildResult | None:
        """Called by the engine's timer: build the whole windows that are due, then retention."""
        if self.support() is not ArchiveSupport.ON or self.broken:
            return None
        due = self.next_archive_due()
        res = None
        if due is not None and self.clock.now() >= max(due, self._retry_at):
            try:
                res = self._build_due(announce=True)
            except ArchiveError as e:
                if self._build_failed(e):
                    return None
        if self.cfg.backend == "codex" and self.clock.now() - self._keep_alive_at >= 24 * 3600:
            self._keep_alive_at = self.clock.now()
            self.codex_owner().keep_alive()
        self.apply_retention()
        return res

    def _build_due(self, announce: bool) -> BuildResult | None:
        """The scheduled build: whole windows only, up to the last one that closed `grace` seconds ago."""
        end = self.whole_windows_end()
        if end is None:
            return None
        res = self.build(announce, end=end)
        self._scheduled_through = end
        return res

    def archive_now(self) -> BuildResult | None:
        """The owner's explicit action: archive everything up to now - grace (the last window may be partial)."""
        return self.build(True)

    def codex_owner(self):
        if self._codex is None:
            from core.codex.backend import CodexOwner
            from core.codex.client import CodexClient
            self._codex = CodexOwner(CodexClient(self.cfg.codex_api), self.paths.root / "codex", self.cid,
                                     transform=self._transform(), clock=self.clock.now, interval=self.interval)
        return self._codex

    def build(self, announce: bool = True, *, end: int | None = None) -> BuildResult | None:
        """Build the archives missing up to `end` (default now - grace: "Archive now" may close a partial window;
        the schedule passes the end of the last whole window)."""
        end = int(self.clock.now()) - self.grace if end is None else end
        self.bus.publish(E.CREATING_HISTORY_ARCHIVES, self.cid)
        if self.cfg.backend == "codex":
            res = self.codex_owner().publish(self.paths.messages_db, self.cfg.topics, end=end)
            link = res.index_cid
        elif self._offloading() and self.builder is build_archives:   # the same build, in a worker process
            res = self.offload.run(build_job, str(self.paths.messages_db), self.cid, tuple(self.cfg.topics),
                                   str(self.paths.archive_dir), str(self.paths.torrent_dir), end,
                                   tuple(self.cfg.trackers), self._keys_path())
            link = res.magnet
        else:
            res = self.builder(self.paths.messages_db, self.cid, self.cfg.topics, self.paths.archive_dir,
                               self.paths.torrent_dir, end=end, trackers=self.cfg.trackers,
                               transform=self._transform(),
                               **({"index_codec": self._index_codec()} if self.cfg.encrypted else {}))
            link = res.magnet
        if not res.new_archive_ids:
            self.bus.publish(E.NO_HISTORY_ARCHIVES_CREATED, self.cid)
            return res
        self.state.set_last_archive_end(self.cid, max(a["to"] for a in res.archives))
        if self.cfg.backend == "codex":        # seed 002: each archive uploaded on its own; the index CID is the link
            self.magnet = link
            self.bus.publish(E.HISTORY_ARCHIVES_CREATED, self.cid, archives=res.archives, link=link)
            self.bus.publish(E.HISTORY_ARCHIVES_SEEDING, self.cid, link=link)
        else:
            self.bus.publish(E.HISTORY_ARCHIVES_CREATED, self.cid, archives=res.archives, magnet=link)
            self._seed()
        if announce:
            self.announce()
        return res

    def _offloading(self) -> bool:
        """A worker can do it: an offloader, and (encrypted communities) a key file the worker can read."""
        return self.offload is not None and (not self.cfg.encrypted or getattr(self.group_keys, "path", None)
                                             is not None)

    def _keys_path(self) -> str | None:
        return str(self.group_keys.path) if self.cfg.encrypted else None

    def _index_codec(self):
        return archive_crypto(self.group_keys, self.cid)[1] if self.cfg.encrypted else None

    def _transform(self):
        """Encrypted communities: each archive is wrapped with the community's current hash-ratchet key."""
        return archive_crypto(self.group_keys, self.cid)[0] if self.cfg.encrypted else None

    def _seed(self) -> None:
        tpath = torrent_path(self.paths.torrent_dir, self.cid)
        if self.seeder is not None and tpath.exists():
            self.seeding = self.seeder.seed(self.cid, self.paths.archive_dir, tpath)
        from core.archive.torrent import read_metainfo
        self.magnet = read_metainfo(tpath).magnet() if tpath.exists() else None
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

    # -- retention and late messages -------------------------------------------------------------------------
    @property
    def late_messages(self) -> int:
        """Messages kept in `waku_messages` because they arrived after their window was archived."""
        return len(self._late)

    def late_windows(self) -> dict[tuple[int, int], int]:
        return dict(Counter(w for _, w in self._late.values()))

    def note(self) -> str | None:
        """One line for the owner's view: a stopped folder, late messages."""
        parts = [f"archives stopped: {self.broken}"] if self.broken else []
        if self._late:
            n = len(self._late)
            parts.append(f"{n} message{'s' if n != 1 else ''} arrived after {'their' if n != 1 else 'its'} week "
                         "was archived (kept, not in any archive)")
        return "; ".join(parts) or None

    def apply_retention(self) -> int:
        """Delete messages older than the retention period that are provably archived. Returns rows deleted.

        The proof, checked at run time for every row deleted: the row's hash, timestamp, topic and a digest of its
        sig, payload and padding equal those of a message decoded from an archive whose bytes we hold and verified:
        - torrent backend: the index opens (unwrapped with the community key when encrypted) and passes
          core.archive.index_check.check_entries against the length of `data` with no error; the archive's
          `size` bytes are all in `data` and hash to the pieces of the torrent we seed, its padding is zeros, it
          opens (hash-ratchet unwrap) and decodes, its metadata equals its index entry and every message lies
          inside its window;
        - Codex backend: the local copy kept for keep-alive exists, its bytes hash to the CID the index names
          (so the node serves exactly these bytes and we can store them again), it opens, decodes and matches its
          entry (core.codex.index.check_index and decode_checked_archive);
        and the row is older than now - retention (the DELETE says `hash IN (...) AND timestamp < cutoff`).
        Any doubt keeps the messages: an index that fails its check keeps all of them, an archive that cannot be
        read, opened or decoded keeps its whole window, and rows that match no archived message (late messages,
        or rows changed behind our back) are kept forever and counted (`late_messages`). Deletes go in committed
        batches, so a crash at any point leaves only proven rows deleted."""
        if self.broken or not self.cfg.topics or self.clock.now() < self._retention_hold:
            return 0
        try:
            last = self.folder_last_end()
        except ArchiveError as e:
            self._retention_hold = self.clock.now() + RETENTION_RETRY_SECONDS
            log.warning("%s: retention keeps every message: the archive index cannot be read (%s: %s)",
                        self.cid, e.code, _one_line(e))
            return 0
        if last is None:
            return 0
        limit = min(int(self.clock.now()) - self.retention, last)
        if waku_messages.count_range(self._messages, self.cfg.topics, EARLIEST, limit) <= self._kept_in(EARLIEST,
                                                                                                        limit):
            return 0                               # only known late/unprovable rows are that old: nothing to do
        return self._classify(None, limit, delete_below=limit)

    def _kept_in(self, lo: int, hi: int) -> int:
        return (sum(1 for ts, _ in self._late.values() if lo <= ts < hi)
                + sum(1 for ts in self._unproven.values() if lo <= ts < hi))

    def _classify(self, lo: int | None, hi: int, delete_below: int | None = None) -> int:
        """Compare the rows in [lo, hi) with the archived messages, window by window: with `delete_below`, delete
        the proven ones older than it (see apply_retention); record rows that are in no archive as late."""
        con, topics = self._messages, self.cfg.topics
        lo = waku_messages.oldest_timestamp(con, topics) if lo is None else lo
        if lo is None or lo >= hi:
            return 0
        try:
            windows, reader = self._windows()
        except (ArchiveError, OSError) as e:
            if delete_below is not None:
                self._retention_hold = self.clock.now() + RETENTION_RETRY_SECONDS
            log.warning("%s: keeping every message: the archives cannot be proven (%s)", self.cid, _one_line(e))
            return 0
        deleted, late = 0, []
        for w in windows:
            a, b = max(w.start, lo), min(w.end, hi)
            if a >= b or waku_messages.count_range(con, topics, a, b) <= self._kept_in(a, b):
                continue
            rows = list(waku_messages.identities(con, topics, a, b))
            try:
                ids = self._window_ids(w, reader, cache=delete_below is None)
            except (ArchiveError, OSError) as e:
                log.warning("%s: keeping the %d messages of [%d, %d): an archive of that window cannot be proven "
                            "(%s)", self.cid, len(rows), w.start, w.end, _one_line(e))
                self._unproven.update((h, ts) for h, ts, _, _ in rows)
                continue
            proven = [h for h, ts, t, n in rows if ids.get(h) == (ts, t, n) and (delete_below is None or
                                                                                 ts < delete_below)]
            late += [(h, ts, (w.start, w.end)) for h, ts, t, n in rows if ids.get(h) != (ts, t, n)]
            if delete_below is not None and proven:
                deleted += waku_messages.delete_by_hash(con, proven, delete_below)
        cursor = lo
        for w in windows + [ArchivedWindow(hi, hi)]:       # rows in no window at all (before the first, empty weeks)
            ga, gb = cursor, min(w.start, hi)
            if ga < gb:
                late += [(h, ts, (ga, gb)) for h, ts, _, _ in waku_messages.identities(con, topics, ga, gb)]
            cursor = max(cursor, w.end)
        self._record_late(late)
        if deleted:
            log.info("%s: retention deleted %d archived messages older than %d", self.cid, deleted, delete_below)
        return deleted

    def _record_late(self, late: list[tuple[bytes, int, tuple[int, int]]]) -> None:
        new = [x for x in late if x[0] not in self._late]
        if not new:
            return
        for h, ts, w in new:
            self._late[h] = (ts, w)
        windows = sorted(Counter(w for _, _, w in new).items())
        log.warning("%s: %d messages arrived after their week was archived; kept in waku_messages, in no archive "
                    "(%d in all; windows %s)", self.cid, len(new), len(self._late),
                    ", ".join(f"[{lo}, {hi}): {n}" for (lo, hi), n in windows))
        self.bus.publish(E.LATE_MESSAGES, self.cid, count=len(new), total=len(self._late),
                         windows=[[lo, hi, n] for (lo, hi), n in windows])

    def _windows(self):
        """The archived windows and a reader of verified archives (core.node.archived: the retention proof)."""
        from core.node import archived
        if self.cfg.backend == "codex":
            return archived.codex_windows(self.codex_owner(), self.group_keys)
        return archived.torrent_windows(self.paths.archive_dir / self.cid,
                                        torrent_path(self.paths.torrent_dir, self.cid), self.cid,
                                        self._index_codec(), self.group_keys)

    def _window_ids(self, w: ArchivedWindow, reader, cache: bool) -> dict[bytes, tuple[int, bytes, bytes]]:
        """hash -> (timestamp, topic, content digest) of every message of the window's archives."""
        key = tuple(aid for aid, _ in w.parts)
        if cache and key in self._ids_cache:
            self._ids_cache.move_to_end(key)
            return self._ids_cache[key]
        if self._offloading() and self.cfg.backend != "codex":      # the same proof, in a worker process
            ids = self.offload.run(torrent_window_ids, str(self.paths.archive_dir / self.cid / DATA_FILE),
                                   str(torrent_path(self.paths.torrent_dir, self.cid)), self.cid, list(w.parts),
                                   self._keys_path())
        else:
            ids = window_ids(w.parts, reader)
        if cache:
            self._ids_cache[key] = ids
            while len(self._ids_cache) > 2:
                self._ids_cache.popitem(last=False)
        return ids
