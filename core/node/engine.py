"""The Engine hosts communities (control or member), runs their work on one queue per community, ticks them
on a timer, and publishes events on its bus. Commands are method calls that return futures."""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from core.archive.constants import INDEX_FILE
from core.node import events as E
from core.node.clock import SystemClock
from core.node.community import SETTLE_SECONDS, CommunityConfig, NodePaths
from core.node.control import ControlNode
from core.node.link_catchup import LinkCatchUp
from core.node.member import NO_LINK_YET, MemberNode
from core.node.state import (ArchiveInfo, ArchiveSupport, CommunityState, DownloadPolicy, DownloadProgress, Role,
                             SeedingState, seeding_state)
from core.status import topics as status_topics
from core.storage.archive_state import ArchiveStateDB

log = logging.getLogger(__name__)
NO_LINK_QUERY_FAILED = "no archive link yet: the store query failed"


class Engine:
    def __init__(self, root: Path | str, *, clock=None, transport=None, torrents=None, hydrator=None,
                 settle: float = SETTLE_SECONDS, tick_seconds: float = 1.0, peers: tuple = (), history=None,
                 builder=None, grace: int | None = None, retention: int | None = None,
                 monotonic: Callable[[], float] = time.monotonic, offload=False):
        """offload: True (or a core.node.offload.Offloader) runs the reference build and the reference import in
        a worker process, so that they do not hold this process's GIL (the window's GUI thread)."""
        self.paths = NodePaths(Path(root)).ensure()
        # offload=True: the process's shared Offloader, whose worker starts (in the background) with the first
        # community, not when the first job waits, and not at all in a window that has no community yet
        self._warm_offloader = offload is True
        if offload is True:
            from core.node.offload import Offloader
            offload = Offloader.shared()
        self.offloader = offload or None      # the (shared) Offloader itself
        self._stop = threading.Event()
        from core.node.offload import StoppingWith
        self._offload = StoppingWith(self.offloader, self._stop) if self.offloader else None  # cancelled by stop()
        self.clock = clock or SystemClock()
        self.bus = E.EventBus()
        self.state = ArchiveStateDB(self.paths.state_db)
        from core.status.archive_encryption import GroupKeyStore, open_archive_bytes
        self.group_keys = GroupKeyStore(self.paths.group_keys)
        self._key_file_error = False
        self.unwrap = lambda raw: open_archive_bytes(raw, self.group_keys)
        from core.status.archive_encryption import open_index_bytes
        self.unwrap_index = lambda raw: open_index_bytes(raw, self.group_keys)
        if torrents is not None:
            torrents.index_unwrap = self.unwrap_index
        self.transport, self.torrents, self.hydrator = transport, torrents, hydrator
        self.history_db = history            # core.storage.member_history.MemberHistory (members)
        self.builder = builder               # None: the single-process reference build; see runner.spark_builder
        self.grace = grace                   # None: ControlNode's default (1 hour)
        self.retention = retention           # None: ControlNode's default (30 days)
        self.settle, self.tick_seconds, self.peers = settle, tick_seconds, tuple(peers)
        self.nodes: dict[str, ControlNode | MemberNode] = {}
        self._queues: dict[str, ThreadPoolExecutor] = {}
        self._unsubs: list[Callable[[], None]] = []
        self._timer: threading.Thread | None = None
        self._lock = threading.RLock()        # guards `nodes`/`_queues` against readers on other threads (the GUI)
        self._ticked: set[str] = set()         # communities whose start is queued: the timer ticks these
        self.monotonic = monotonic            # download rate: seconds between snapshots (injectable)
        self._rates: dict[str, tuple[str, deque]] = {}   # cid -> (infohash, recent (time, bytes done))
        self.links = LinkCatchUp(self.clock)   # members: when to ask the store for archive links again

    # -- lifecycle ---------------------------------------------------------------------------------------
    def add_community(self, cfg: CommunityConfig) -> Future:
        if self._warm_offloader:
            self.offloader.warm()             # once: it returns at once when a worker has started
        if cfg.role == "control":
            node: ControlNode | MemberNode = ControlNode(
                cfg, self.paths, self.state, self.bus, self.clock, seeder=self.torrents, announcer=self._announce,
                store_query=self._store_query, group_keys=self.group_keys, grace=self.grace, offload=self._offload,
                **({"retention": self.retention} if self.retention is not None else {}),
                **({"builder": self.builder} if self.builder is not None else {}))
        else:
            fetcher = self.torrents
            if cfg.backend == "codex":
                from core.codex.client import CodexClient
                from core.codex.fetcher import CodexFetcher, LinkFetcher
                fetcher = LinkFetcher(self.torrents, CodexFetcher(CodexClient(cfg.codex_api), untransform=self.unwrap))
            node = MemberNode(cfg, self.paths, self.state, self.bus, self.clock, fetcher=fetcher,
                              hydrator=self._hydrator(), settle=self.settle, peers=self.peers)
        if isinstance(node, MemberNode):
            node.index_unwrap = self.unwrap_index
        # registered before subscribing: a snapshot lists the community at once (from its saved state) however long
        # the transport takes, and a message arriving during subscribe() finds the community's queue
        with self._lock:
            self._queues[cfg.community_id] = ThreadPoolExecutor(
                1, thread_name_prefix=f"community-{cfg.community_id[:8]}")
            self.nodes[cfg.community_id] = node
        if self.transport is not None and isinstance(node, ControlNode):
            topics = [status_topics.content_topic(c) for c in cfg.channel_chat_ids]
            if topics:
                self._unsubs.append(self.transport.subscribe(topics, lambda m, n=node: self.submit(
                    n.cid, n.store_messages, [m])))
        elif self.transport is not None:
            for chat in cfg.link_chat_ids:
                ct = status_topics.content_topic(chat)
                self._unsubs.append(self.transport.subscribe([ct], lambda m, n=node, c=chat: self._relayed_link(
                    n, m, c)))
        with self._lock:
            fut = self.submit(cfg.community_id, self._start_node, node)
            self._ticked.add(cfg.community_id)      # ticks only after its start, as before
        return fut

    def _hydrator(self):
        """The member's hydrator; with an offloader, a reference hydrator (without unwrap, or with this engine's)
        runs in a worker process."""
        h = self.hydrator
        if self.offloader is None or getattr(h, "history", None) is None or getattr(h, "offloaded", False) or \
                getattr(h, "unwrap", False) not in (None, self.unwrap):
            return h
        from core.node.hydrate import offloaded_hydrator
        return offloaded_hydrator(self._offload, h, None if h.unwrap is None else self.paths.group_keys)

    def _start_node(self, node) -> None:
        node.start()  # first resume what an earlier run left pending, then look for newer links
        if isinstance(node, MemberNode) and self.transport is not None:
            self._query_links(node)

    def _relayed_link(self, node: MemberNode, m, chat: str) -> None:
        if self.links.first_sighting(node.cid, m.hash):
            self.submit(node.cid, node.on_envelope, m.payload, chat)

    def _query_links(self, node: MemberNode) -> None:
        """Links announced while we were away (or whose relay we missed): ask the store, newest last. A failed
        query is asked again soon (core/node/link_catchup.py), and says so while the member has no link yet."""
        start, end = self.links.begin(node.cid)
        errors: list = []
        try:
            for chat in node.cfg.link_chat_ids:
                for m in self.transport.query([status_topics.content_topic(chat)], start, end, errors=errors):
                    if self.links.first_sighting(node.cid, m.hash):
                        node.on_envelope(m.payload, chat)
        except Exception as e:  # noqa: BLE001 - a transport failure of any kind is retried, never fatal
            log.warning("store query for %s failed: %s", node.cid, e)
            errors.append(("store", str(e) or type(e).__name__))
        delay = self.links.finished(node.cid, end - 1, errors)
        if self._stop.is_set():
            return   # a query ended by the stop is not a failure to show; the next start asks again
        if node.job is not None or self.state.pending_link(node.cid) is not None or \
                self.state.archive_info(node.cid).last_magnetlink_uri:
            return
        if errors:
            node.set_waiting(f"{NO_LINK_QUERY_FAILED} ({errors[-1][1]}); asking again in {delay:.0f} s")
        elif (node.waiting_reason or "").startswith(NO_LINK_QUERY_FAILED):
            node.set_waiting(NO_LINK_YET)

    def start(self) -> "Engine":
        self._timer = threading.Thread(target=self._run_timer, name="engine-timer", daemon=True)
        self._timer.start()
        return self

    def _run_timer(self) -> None:
        while not self._stop.wait(self.tick_seconds):
            self.tick_all()

    def tick_all(self) -> list[Future]:
        with self._lock:
            live = [(cid, n) for cid, n in self.nodes.items() if cid in self._ticked]
        futures = [self.submit(cid, n.tick) for cid, n in live]
        if self.transport is not None:
            futures += [self.submit(cid, self._query_links, n) for cid, n in live
                        if isinstance(n, MemberNode) and self.links.claim(cid)]
        if self._group_keys_added():
            futures += [self.submit(cid, n.retry_parked) for cid, n in live if isinstance(n, MemberNode)]
        return futures

    def _group_keys_added(self) -> bool:
        """A key written by another process (`archivist key group add`) resumes parked archives without a
        restart. A damaged key file is reported, never fatal: the keys already loaded stay in use."""
        from core.status.errors import EncryptionError
        try:
            added = self.group_keys.refresh()
            self._key_file_error = False
            return added
        except (EncryptionError, OSError) as e:
            if not self._key_file_error:
                self.bus.publish(E.ERROR, "", code=getattr(e, "code", "group-keys"), message=str(e))
            self._key_file_error = True
            return False

    def stop(self) -> None:
        self._stop.set()
        cancel = getattr(self.transport, "cancel_queries", None)
        if cancel is not None:
            cancel()   # a store query whose peer does not answer would hold its queue, and this stop, for 30 s a page
        if self._timer is not None:
            self._timer.join(5)
        for u in self._unsubs:
            u()
        for n in self.nodes.values():
            if isinstance(n, MemberNode) and n.job is not None:
                n.job.pause() if hasattr(n.job, "pause") else None
        for q in self._queues.values():
            q.shutdown(wait=True, cancel_futures=True)
        for n in self.nodes.values():
            if isinstance(n, ControlNode):
                n.close()
        if self.offloader is not None:
            self.offloader.release()
        self.state.close()

    # -- plumbing ----------------------------------------------------------------------------------------
    def submit(self, cid: str, fn: Callable, *args: Any) -> Future:
        """Run `fn` on the community's own queue: two jobs of one community never run at once."""
        def run():
            try:
                return fn(*args)
            except Exception as e:  # surface on the bus as well as in the future
                if self._stop.is_set() and getattr(e, "code", None) == "cancelled":
                    log.info("stopped a running job of %s: %s", cid, e)   # Quit, not a failure; resumed next start
                    raise
                log.exception("job failed for %s", cid)
                self.bus.publish(E.ERROR, cid, code=type(e).__name__, message=str(e))
                raise
        return self._queues[cid].submit(run)

    def _announce(self, envelopes) -> None:
        if self.transport is None:
            return
        ts = int(self.clock.now() * 1e9)
        for content_topic, env in envelopes:
            self.transport.publish(content_topic, env, ts)

    def _store_query(self, content_topics, start, end):
        return self.transport.query(content_topics, start, end) if self.transport is not None else []

    # -- commands (futures) --------------------------------------------------------------------------------
    def add_group_key(self, cid: str, key) -> Future:
        """Store a community's hash-ratchet key (GroupKey, or "HEX[@TIMESTAMP_MS]") and retry parked archives."""
        from core.status.archive_encryption import parse_cli_key
        if isinstance(key, str):
            key = parse_cli_key(key, cid)
        self.group_keys.add(key)
        node = self.nodes.get(cid)
        if isinstance(node, MemberNode):
            return self.submit(cid, node.retry_parked)
        f: Future = Future()
        f.set_result(0)
        return f

    def set_global_archive_support(self, enabled: bool) -> Future:
        f: Future = Future()
        self.state.set_global_archive_support(enabled)
        futs = [self.submit(cid, n.set_support, bool(self.state.community_support(cid)))
                for cid, n in self.nodes.items() if isinstance(n, ControlNode)]
        f.set_result(len(futs))
        return f

    def set_archive_support(self, cid: str, enabled: bool) -> Future:
        node = self.nodes[cid]
        if isinstance(node, ControlNode):
            return self.submit(cid, node.set_support, enabled)
        return self.submit(cid, self.state.set_community_support, cid, enabled)

    def archive_now(self, cid: str) -> Future:
        """The owner's explicit build: everything up to now - grace, even a partial window (the schedule builds
        whole 7-day windows only)."""
        node = self.nodes[cid]
        if not isinstance(node, ControlNode):
            raise ValueError("only a control node builds archives")
        return self.submit(cid, node.archive_now)

    def set_schedule(self, *, grace: int | None = None, retention: int | None = None) -> list[Future]:
        """A new grace period and/or retention (seconds) for every control community, from its next tick on (the
        window's Settings apply them without a restart). Each is set on the community's own queue."""
        def apply(node) -> None:
            if grace is not None:
                node.grace = int(grace)
            if retention is not None:
                node.retention = int(retention)
        with self._lock:
            if grace is not None:
                self.grace = int(grace)
            if retention is not None:
                self.retention = int(retention)
            controls = [(cid, n) for cid, n in self.nodes.items() if isinstance(n, ControlNode)]
        return [self.submit(cid, apply, n) for cid, n in controls]

    def set_download_policy(self, cid: str, policy: str | DownloadPolicy, start: int | None = None,
                            end: int | None = None) -> Future:
        node = self.nodes[cid]
        return self.submit(cid, node.set_policy, DownloadPolicy(policy).value, start, end)

    def cancel_download(self, cid: str) -> Future:
        node = self.nodes[cid]

        def cancel():
            if node.job is not None:
                node.job.cancel()
                node.job = None
            node.deadline = None
            node.set_waiting("download cancelled: resume to continue")
        return self.submit(cid, cancel)

    def resume_download(self, cid: str) -> Future:
        node = self.nodes[cid]

        def resume():
            node.deadline = self.clock.now()
        return self.submit(cid, resume)

    def history(self, cid: str, chat: str | None = None, limit: int = 1000, offset: int = 0,
                start: int | None = None, end: int | None = None) -> list[dict]:
        """Imported messages of a community (members), oldest first."""
        if self.history_db is None:
            return []
        return self.history_db.messages(cid, start, end, chat, limit, offset)

    # -- snapshots -----------------------------------------------------------------------------------------
    def archive_folder(self, cid: str) -> Path:
        """Where a community's archives are (`index`, `data`): read-only use by the GUI (message counts)."""
        return self.paths.archive_dir / cid

    def communities(self) -> list[CommunityState]:
        """One plain-value snapshot per community (the GUI's read API: it never reads node internals). Safe from
        any thread while communities are being added; a community whose state cannot be read right now (a folder
        being rewritten) is listed from its config and saved state instead of failing the whole list."""
        with self._lock:
            cids = list(self.nodes)
        out = []
        for cid in cids:
            try:
                out.append(self.community_state(cid))
            except Exception as e:  # noqa: BLE001 - one unreadable community must not hide the others
                log.warning("snapshot of %s failed: %s", cid, e)
                out.append(self._fallback_state(cid, f"state not readable right now: {e}"))
        return out

    def _fallback_state(self, cid: str, reason: str) -> CommunityState:
        node = self.nodes[cid]
        if isinstance(node, ControlNode):
            return CommunityState(cid, node.cfg.name, Role.CONTROL, node.support(), waiting_reason=reason)
        return CommunityState(cid, node.cfg.name, Role.MEMBER, waiting_reason=reason,
                              policy=DownloadPolicy(node.cfg.policy), range_start=node.cfg.range_start,
                              range_end=node.cfg.range_end)

    def community_state(self, cid: str) -> CommunityState:
        node = self.nodes[cid]
        folder_path = self.paths.archive_dir / cid
        entries = {}
        if (folder_path / INDEX_FILE).exists():
            from core.archive.codec import decode_index
            from core.archive.inspect import read_index
            try:   # the index is what counts (a member's data holds only the chosen archives)
                entries = decode_index(self.unwrap_index(read_index(folder_path / INDEX_FILE)))
            except Exception:  # encrypted without our key, or damaged: nothing to list yet
                entries = {}
        imported = self.state.archive_ids(cid, imported=True)
        held = self.state.archive_ids(cid) if isinstance(node, MemberNode) else set(entries)
        archives = tuple(ArchiveInfo(a, e.start, e.end, e.size, local=a in held, imported=a in imported,
                                     state=getattr(node, "parked", {}).get(a, ""))
                         for a, e in sorted(entries.items(), key=lambda kv: kv[1].offset))
        if isinstance(node, ControlNode):
            seeding = SeedingState.NOT_SEEDING
            peers = uploaded = 0
            if node.seeding is not None and hasattr(node.seeding, "snapshot"):
                snap = node.seeding.snapshot()
                peers, uploaded = snap.get("peers", 0), snap.get("uploaded", 0)
                seeding = seeding_state(snap.get("state"))
            return CommunityState(cid, node.cfg.name, Role.CONTROL, node.support(), seeding, peers, uploaded,
                                  node.magnet, node.next_archive_due(), node.note(), archives,
                                  broken=node.broken, late_messages=node.late_messages)
        support = ArchiveSupport.ON if self.state.community_support(cid) is not False else ArchiveSupport.OFF
        parked = dict(node.parked)
        return CommunityState(cid, node.cfg.name, Role.MEMBER, support, waiting_reason=node.waiting_reason,
                              archives=archives, policy=DownloadPolicy(node.cfg.policy),
                              range_start=node.cfg.range_start, range_end=node.cfg.range_end,
                              encrypted=bool(getattr(node.cfg, "encrypted", False)),
                              key_wait=self._key_wait(node.link_parked, parked), parked=tuple(sorted(parked.items())),
                              download=self._download(cid, node.job))

    @staticmethod
    def _key_wait(link_parked: str | None, parked: dict[str, str]) -> str | None:
        """Why the member waits for the community's key, in words (None: it does not)."""
        if link_parked is not None:
            return "waiting for the community's key: the archive index cannot be opened without it"
        keyless = sum(1 for r in parked.values() if r.startswith("decryption key missing"))
        if keyless:
            return (f"waiting for the community's key: {keyless} downloaded archive{'' if keyless == 1 else 's'} "
                    "cannot be imported without it")
        return None

    def _download(self, cid: str, job) -> DownloadProgress | None:
        """The running torrent job's progress (read-only: its snapshot and piece sets), with a rate measured
        between snapshots over the last 10 s."""
        if job is None or not hasattr(job, "snapshot"):
            with self._lock:
                self._rates.pop(cid, None)
            return None
        snap = job.snapshot()
        done, wanted = int(snap.get("done_bytes") or 0), int(snap.get("wanted_bytes") or 0)
        now = self.monotonic()
        with self._lock:
            key, samples = self._rates.get(cid, ("", deque()))
            if key != snap.get("infohash", "") or (samples and done < samples[-1][1]):
                samples = deque()
            samples.append((now, done))
            while len(samples) > 2 and now - samples[0][0] > 10.0:
                samples.popleft()
            self._rates[cid] = (snap.get("infohash", ""), samples)
            (t0, b0), (t1, b1) = samples[0], samples[-1]
        rate = (b1 - b0) / (t1 - t0) if t1 - t0 >= 0.5 else None
        eta = (wanted - done) / rate if rate and rate > 0 and wanted > done else (0.0 if wanted and done >= wanted
                                                                                 else None)
        have = frozenset(getattr(job, "have", ()))
        entries = getattr(job, "entries", None) or {}
        per = []
        for aid in list(getattr(job, "chosen", ()) or ()):
            e = entries.get(aid)
            pieces = list(getattr(e, "pieces", ()) or ())
            if e is None or not pieces:
                continue
            per.append((aid, e.size * sum(1 for p in pieces if p in have) // len(pieces), e.size))
        return DownloadProgress(done, wanted, rate, eta, str(snap.get("state", "")), tuple(per))
