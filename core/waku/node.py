"""The embedded Waku node, async (trio): host, relay, metadata, store v3/v2-beta4, lightpush v3/v2.

Use it through EmbeddedWakuBackend (embedded.py), which runs it in its own thread.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import multiaddr
import trio
from libp2p import new_host
from libp2p.abc import INotifee
from libp2p.peer.id import ID
from libp2p.stream_muxer.mplex.mplex import MPLEX_PROTOCOL_ID, Mplex
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX_PROTOCOL_ID
from libp2p.stream_muxer.yamux.yamux import Yamux
from libp2p.tools.anyio_service.context import background_trio_service

from core.waku import lightpush, looptrace, metadata, peer_exchange, store_protocol
from core.waku.peer_manager import PROTECT_DIALLED, PeerManager  # noqa: F401 - PROTECT_DIALLED re-exported
from core.waku.identity import load_or_create_identity
from core.waku.ratelimit import IP_BURST, IP_RATE_S, PEER_BURST, PEER_RATE_S, RequestLimiter
from core.waku.connection_limits import ConnectionLimits, InboundGate
from core.waku.libp2p_patches.connections import conn_remote_ip, connection_config, incoming_unprotected, \
    install_connection_limits
from core.waku.libp2p_patches.gossipsub import WakuGossipSub
from core.waku.libp2p_patches.host import check_listening, close_connections, disable_auto_connector
from core.waku.libp2p_patches.pubsub import WakuPubsub, relay_rpc_limit
from core.waku.libp2p_patches.peerids import parsed as parsed_peer_id
from core.waku.edge_streams import DEFAULT_READ_TIMEOUT_S
from core.waku.libp2p_patches.fastpath import install_fast_negotiation
from core.waku.libp2p_patches.locks import UncontendedLock, install_uncontended_stream_semaphore
from core.waku.libp2p_patches.oneframe import answers_in_one_frame
from core.waku.libp2p_patches.sendq import DISCONNECT_S
from core.waku.message import DEFAULT_MAX_FUTURE_S, DEFAULT_MAX_MESSAGE_SIZE, NS, InvalidMessage, WakuMessage, \
    encode_message, validate_message
from core.waku.relay import ReceivedMessage, RelayValidator
from core.waku.store_db import MessageStore
from core.waku.topics import STATUS_CLUSTER, STATUS_DEFAULT_SHARD, InvalidTopic, auto_shard_topic, \
    parse_content_topic, static_shard_topic

log = logging.getLogger(__name__)
PRUNE_INTERVAL_S = 3600
WRITE_CHUNK = 128          # relayed messages the writer stores per transaction (one multi-row INSERT, on the loop)
STORE_BATCH_S = 0.01      # the writer waits this long (or for WRITE_CHUNK messages) to commit them together
QUERY_INLINE_ROWS = 256   # a store query writes at most this many buffered messages on the loop, more in a thread
CHECKPOINT_ROWS = 4000     # a WAL checkpoint (in a worker thread) after this many rows written
PROTECT_STATIC = "waku-static"      # tag-store protection of configured peers (and PROTECT_DIALLED of every
                                    # peer we dialled): never refused or pruned for limits


@dataclass
class NodeConfig:
    host: str = "127.0.0.1"
    tcp_port: int = 0
    ws_port: int | None = 0                 # None: no WebSocket listener
    cluster_id: int = STATUS_CLUSTER
    shards: tuple[int, ...] = (STATUS_DEFAULT_SHARD,)
    pubsub_topics: tuple[str, ...] | None = None   # relay topics; default: the static shards above
    autosharding_shards: int = 0            # >0: lightpush without a topic uses autosharding
    key_path: Path | None = None            # persisted identity; None = ephemeral
    store: MessageStore | None = None       # None: no store service, nothing persisted
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE   # 1 MiB as the Status fleet (nwaku default: 150 KiB)
    max_future_s: float = DEFAULT_MAX_FUTURE_S     # refuse timestamps further ahead (relay, lightpush, publish)
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S  # deadline of every store/lightpush/metadata read and write
    metadata_disconnect_unsupported: bool = False  # nwaku disconnects peers without metadata
    requests_per_s: float = PEER_RATE_S     # per-peer store/lightpush limit (token bucket) ...
    request_burst: int = PEER_BURST         # ... beyond which peers get 429
    requests_per_ip_s: float = IP_RATE_S    # the same per source address, whatever peer ids it uses ...
    request_burst_per_ip: int = IP_BURST    # ... (protected peers and rate_exempt_ips skip this one)
    rate_exempt_ips: tuple[str, ...] = ()   # addresses without an address budget (none by default)
    relay_send_deadline_s: float = DISCONNECT_S    # a relay peer whose send queue is stuck this long is dropped
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)  # incoming, per IP, handshakes, streams
    protected_peers: tuple[str, ...] = ()   # peer ids always admitted (besides every peer we dial)
    clock: Callable[[], int] = field(default=time.time_ns, repr=False)  # Unix ns: timestamp checks, back-off
    peer_store_path: Path | None = None     # known peers and their back-off (SQLite); None = in memory
    target_peers: int = 8                   # below this many connections, stored peers are dialled ...
    peer_check_interval_s: float = 30.0     # ... checked this often (peer_manager.PeerManager.maintain)
    dial_timeout_s: float = 10.0            # one dial attempt of one address
    enrtree_url: str | None = None          # EIP-1459 tree walked at start (networks.py: --network status) ...
    dns_refresh_s: float = 1800.0           # ... and again this often: only changed records (dns_refresh.py)
    dns_resolver: Callable | None = field(default=None, repr=False)  # name -> TXT strings; None: system DNS

    def topics(self) -> tuple[str, ...]:
        return self.pubsub_topics or tuple(static_shard_topic(self.cluster_id, s) for s in self.shards)


class _ConnNotifee(INotifee):
    """The swarm calls these after its books are updated (a connection is listed before `connected` and
    unlisted before `disconnected`), so a condition on `connected_peers()` re-checked here sees the change."""

    def __init__(self, node: "WakuNode"):
        self.node = node

    async def connected(self, network, conn) -> None:
        self.node._on_connected(conn.muxed_conn.peer_id)
        self.node._connections_changed()

    async def disconnected(self, network, conn) -> None:
        self.node._connections_changed()

    async def opened_stream(self, network, stream) -> None:
        pass

    async def closed_stream(self, network, stream) -> None:
        pass

    async def listen(self, network, maddr) -> None:
        pass

    async def listen_close(self, network, maddr) -> None:
        pass


class WakuNode:
    def __init__(self, config: NodeConfig, on_message: Callable[[ReceivedMessage], None] | None = None):
        self.config = config
        self.on_message = on_message
        self.validator = RelayValidator(config.max_message_size, max_future_s=config.max_future_s,
                                        clock=config.clock)
        self.key_pair = load_or_create_identity(config.key_path)
        self.store = config.store
        self._store_buffer: list[tuple[str, WakuMessage]] = []
        self._store_wakeup = trio.Event()
        self._store_lock = UncontendedLock()   # a store query takes it once: no scheduling point when it is free
        self._uncheckpointed, self._checkpointing = 0, False
        if self.store is not None:
            self.store.defer_checkpoints()
        self.metadata_rejected: set[str] = set()
        self._nursery: trio.Nursery | None = None
        self._stop_requested: trio.Event | None = None   # run() is serving; set: stop gracefully
        self.closed_in_time: bool | None = None   # the stop closed every connection within fix 17's bound
        addrs = [multiaddr.Multiaddr(f"/ip4/{config.host}/tcp/{config.tcp_port}")]
        if config.ws_port is not None:
            addrs.append(multiaddr.Multiaddr(f"/ip4/{config.host}/tcp/{config.ws_port}/ws"))
        self._listen = addrs
        self.host = new_host(key_pair=self.key_pair, sec_opt=_noise(self.key_pair),
                             muxer_opt={YAMUX_PROTOCOL_ID: Yamux, MPLEX_PROTOCOL_ID: Mplex}, listen_addrs=addrs,
                             connection_config=connection_config(config.limits))
        disable_auto_connector(self.host)
        swarm = self.host.get_network()
        for p in config.protected_peers:
            swarm.protect(ID.from_base58(p), PROTECT_STATIC)
        self.gate = InboundGate(config.limits, is_protected=swarm.tag_store.is_protected,
                                count_incoming=lambda: incoming_unprotected(swarm, swarm.tag_store.is_protected))
        install_fast_negotiation(self.host)   # fix 23; before the stream limit wraps the handler
        install_connection_limits(swarm, self.gate)
        install_uncontended_stream_semaphore(swarm)   # fix 32
        self._rejected_changed = trio.Event()
        self._conn_changed = trio.Event()   # set (and replaced) whenever a connection opens or closes
        self.router = WakuGossipSub()
        self.pubsub = WakuPubsub(self.host, self.router, self._on_pubsub,
                                 max_rpc_size=relay_rpc_limit(config.max_message_size))  # fix 16
        self.pubsub.send_watch.disconnect_s = config.relay_send_deadline_s
        self.stuck_peers_dropped: dict[str, str] = {}   # peer id -> why its relay send queue was judged stuck
        h = self.host
        one = answers_in_one_frame   # fix 30: these answer through edge_streams.serve_exchange (echo, answer, FIN)
        h.set_stream_handler(metadata.METADATA_PROTOCOL, one(self._serve_metadata))
        self.limiter = RequestLimiter(per_peer_s=config.requests_per_s, peer_burst=config.request_burst,
                                      per_ip_s=config.requests_per_ip_s, ip_burst=config.request_burst_per_ip,
                                      exempt_ips=config.rate_exempt_ips)
        self._lp = dict(max_request=config.max_message_size + lightpush.REQUEST_OVERHEAD,
                        timeout_s=config.read_timeout_s)
        h.set_stream_handler(lightpush.LIGHTPUSH_V3_PROTOCOL, one(self._serve_lightpush_v3))
        h.set_stream_handler(lightpush.LIGHTPUSH_V2_PROTOCOL, one(self._serve_lightpush_v2))
        if self.store is not None:
            h.set_stream_handler(store_protocol.STORE_V3_PROTOCOL, one(self._serve_store_v3))
            h.set_stream_handler(store_protocol.STORE_V2_PROTOCOL, one(self._serve_store_v2))
        # 34/WAKU2-PEER-EXCHANGE: answers from the records we know (filled by DNS discovery and by peers' records)
        self.px_cache = peer_exchange.EnrCache()
        peer_exchange.serve_on(h, self.px_cache, timeout_s=config.read_timeout_s)
        self.peers = PeerManager(self)   # the persistent peer store, back-off, discovery -> px_cache
        h.get_network().register_notifee(_ConnNotifee(self))

    async def exchange_peers(self, peer_id: str, num_peers: int = 10) -> list:
        """Ask a peer for records of other peers (peer exchange); core.waku.enr.Enr, signatures checked."""
        recs = await peer_exchange.request(self.host, ID.from_base58(peer_id), num_peers,
                                           timeout_s=self.config.read_timeout_s)
        self.peers.learn(recs, "px")
        return recs

    async def connect_discovered(self, records, max_new: int = 10, source: str = "px") -> list[str]:
        """Dial discovered peers of our cluster and shards (DNS discovery or peer exchange)."""
        return await peer_exchange.connect_discovered(self, records, cluster=self.config.cluster_id,
                                                      shards=self.config.shards, max_new=max_new, source=source)

    # --- lifecycle ---
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until request_stop() (a graceful stop: the connections are closed first, while every task
        still runs) or until cancelled (the connections are closed after, shielded and bounded: a WebSocket
        peer's close answer can no longer be read then, so that close waits out its bound)."""
        self._stop_requested = trio.Event()
        try:
            async with self.host.run(self._listen), background_trio_service(self.pubsub), \
                    background_trio_service(self.router):
                check_listening(self.host, self._listen)
                await self.pubsub.wait_until_ready()
                try:
                    async with trio.open_nursery() as n:
                        self._nursery = n
                        for t in self.config.topics():
                            await self.subscribe_topic(t)
                        if self.store is not None:
                            n.start_soon(self._store_writer)
                            n.start_soon(self._pruner)
                        n.start_soon(self.peers.run)
                        n.start_soon(self._send_watchdog)
                        task_status.started()
                        await self._stop_requested.wait()
                        self.closed_in_time = await close_connections(self.host.get_network())
                        n.cancel_scope.cancel()
                finally:
                    in_time = await close_connections(self.host.get_network())   # fix 17: peers see us go
                    self.closed_in_time = in_time if self.closed_in_time is None else self.closed_in_time
        finally:
            self.peers.close()   # once the host and every task that may use the peer store have ended

    def request_stop(self) -> bool:
        """Ask run() to close its connections and return (in the trio thread); False if it is not running."""
        if self._stop_requested is None:
            return False
        self._stop_requested.set()
        return True

    @property
    def peer_id(self) -> str:
        return self.host.get_id().pretty()

    def listen_addrs(self) -> list[str]:
        return [str(a) for a in self.host.get_addrs()]

    # --- relay ---
    async def subscribe_topic(self, pubsub_topic: str) -> None:
        if pubsub_topic in self.pubsub.topic_ids:
            return
        self.pubsub.set_topic_validator(pubsub_topic, self.validator.gossipsub_validator, False)
        await self.pubsub.subscribe(pubsub_topic)

    def relay_peers(self, pubsub_topic: str) -> int:
        return len(self.pubsub.peer_topics.get(pubsub_topic, ()))

    async def publish(self, pubsub_topic: str, msg: WakuMessage, *, wait: bool = True,
                      data: bytes | None = None, want_hash: bool = True) -> bytes:
        """Our edge (local publish and lightpush): also insists on a well-formed content topic. Relayed
        messages are not held to that, as nwaku does not check it either. `wait`: back-pressure from relay
        peers that are still reading (libp2p_patches/sendq.py); lightpush passes False. `data`: msg already
        encoded (lightpush: encoded once per request; the relay validator is vouched for it, not decoding it
        again). Returns the message hash (b"" with want_hash=False: lightpush does not use it)."""
        if data is None:
            data = encode_message(msg)
        validate_message(msg, max_size=self.config.max_message_size, encoded_size=len(data),
                         now_ns=self.config.clock(), max_future_ns=int(self.config.max_future_s * NS))
        try:
            parse_content_topic(msg.content_topic)
        except InvalidTopic as e:
            raise InvalidMessage(str(e)) from e
        if pubsub_topic not in self.pubsub.topic_ids:
            await self.subscribe_topic(pubsub_topic)
        self.validator.vouch(data, msg)
        await self.pubsub.publish_unsigned(pubsub_topic, data, wait=wait)
        return msg.hash(pubsub_topic) if want_hash else b""

    async def _send_watchdog(self) -> None:
        """Disconnect relay peers whose send queue is stuck (libp2p_patches.sendq.QueueWatch.stuck_reason): a peer that
        stopped reading no longer holds its queued RPCs and its connection for good."""
        watch = self.pubsub.send_watch
        while True:
            await trio.sleep(min(1.0, watch.disconnect_s / 4))
            for pid, queue in list(self.pubsub.peer_queues.items()):
                reason = watch.stuck_reason(queue)
                if reason is not None:
                    freed = watch.release(queue)
                    self.pubsub.peer_queues.pop(pid, None)   # nothing more is queued for it (pubsub skips it)
                    log.warning("relay: disconnecting %s: %s; %d queued RPCs released", pid, reason, freed)
                    self.stuck_peers_dropped[pid.pretty()] = reason
                    await close_connections(self.host.get_network(), peer_id=pid)

    async def wait_for_relay_peer(self, peer_id: str, pubsub_topic: str, timeout: float = 10.0) -> None:
        await self.router.wait_for_mesh(ID.from_base58(peer_id), pubsub_topic, timeout)

    def _on_pubsub(self, topic: str, pubsub_msg) -> None:
        try:
            m = self.validator.decoded(pubsub_msg.data)
        except Exception:
            return  # cannot happen after validation; never let it reach GossipSub
        if self.store is not None and not m.is_ephemeral:
            self._store_buffer.append((topic, m))
            self._store_wakeup.set()
        if self.on_message is not None:
            self.on_message(ReceivedMessage(topic, m, m.hash(topic)))

    async def _store_writer(self) -> None:
        """Writes what relay buffers: one transaction for what arrives within STORE_BATCH_S (a commit per
        message cost more than the insert under a relay flood), WRITE_CHUNK rows per step and the lock released
        between steps, so a store query gets in between (it writes what is buffered at that moment itself, so
        it never waits for the batching). Each step is one multi-row INSERT on the loop (~1-3 ms): in a worker
        thread (issue 21's fifth to eighth passes) a step took 20-65 ms once a lightpush flood saturated the loop
        (the thread waited for a CPU and the GIL), and every store query waited for it behind the lock: p95 43-61
        ms during the flood, 14-16 ms on the loop (docs/BENCHMARKS.md, 2026-11-27 17:20)."""
        while True:
            await self._store_wakeup.wait()
            with trio.move_on_after(STORE_BATCH_S):   # group commit: one transaction for what arrives meanwhile
                while len(self._store_buffer) < WRITE_CHUNK:
                    self._store_wakeup = trio.Event()
                    await self._store_wakeup.wait()
            self._store_wakeup = trio.Event()
            while self._store_buffer:
                async with self._store_lock:
                    await self._write_buffered(WRITE_CHUNK, inline=WRITE_CHUNK)
            self._maybe_checkpoint()

    async def _write_buffered(self, limit: int, *, inline: int) -> None:
        """Store up to `limit` buffered messages: rows made on the loop (~7 us each), inserted on the loop when
        there are at most `inline`, else in a worker thread (MessageStore.insert_rows: one GIL hand-over per
        batch of up to 128), so the loop goes on meanwhile. Callers hold _store_lock."""
        batch = self._store_buffer[:limit]
        del self._store_buffer[:len(batch)]
        if not batch:
            return
        rows = self.store.rows(batch)
        if len(rows) <= inline:
            self.store.insert_rows(rows)
        else:
            await trio.to_thread.run_sync(self.store.insert_rows, rows)
        self._uncheckpointed += len(batch)

    def _maybe_checkpoint(self) -> None:
        if self._uncheckpointed >= CHECKPOINT_ROWS and not self._checkpointing and self._nursery is not None:
            self._checkpointing = True
            self._nursery.start_soon(self._checkpoint)

    async def flush_store(self) -> None:
        """Write buffered relay messages; returns once they are in SQLite."""
        async with self._store_flushed():
            pass

    @contextlib.asynccontextmanager
    async def _store_flushed(self):
        """Every message buffered so far is in SQLite, and no write is under way until the block ends (a store
        query is answered inside it, on the loop: store_protocol.serve_v3).

        A query waits for the writer's step under way (one multi-row INSERT of up to WRITE_CHUNK rows, on the
        loop) and then writes what is still buffered: up to QUERY_INLINE_ROWS on the loop, more in a worker
        thread. History (issue 21): until its second pass the writer inserted row by row in a thread (sqlite3
        gave up the GIL around every row and each time waited up to the busy loop's 5 ms switch interval to get
        it back: 20 rows took 20-70 ms); until its fifth pass it wrote on the loop row by row, 64 rows a step
        (10-55 ms steps on a loaded machine); from the fifth to the eighth pass one multi-row INSERT
        (MessageStore.insert_rows) in a worker thread, which a saturated loop starved (20-65 ms a step). Now
        the same INSERT on the loop. Checkpoints, the one part that syncs to disk, stay in a worker thread."""
        async with self._store_lock:
            await self._write_buffered(len(self._store_buffer), inline=QUERY_INLINE_ROWS)
            yield
        self._maybe_checkpoint()

    async def _checkpoint(self) -> None:
        self._uncheckpointed = 0
        try:
            await trio.to_thread.run_sync(self.store.checkpoint)
        except Exception as e:  # noqa: BLE001 - the next one retries; SQLite checkpoints at close anyway
            log.warning("store: WAL checkpoint failed: %s", e)
        finally:
            self._checkpointing = False

    def _allowed(self, stream) -> bool:
        """The request's peer and source address are within their budgets (ratelimit.RequestLimiter)."""
        conn = stream.muxed_conn
        return self.limiter.allow(conn.peer_id.pretty(), conn_remote_ip(conn),
                                  protected=self.host.get_network().is_protected(conn.peer_id))

    async def _serve_store_v3(self, stream) -> None:
        looptrace.tag("store v3")
        # a query sees every message relayed before it is answered (writes flushed first, under one lock)
        await store_protocol.serve_v3(stream, self.store, self._allowed(stream), timeout_s=self.config.read_timeout_s,
                                      writes=self._store_flushed)

    async def _serve_lightpush_v3(self, stream) -> None:
        looptrace.tag("lightpush v3")
        await lightpush.serve_v3(stream, self._lightpush_publish, self._allowed(stream), **self._lp)

    async def _serve_lightpush_v2(self, stream) -> None:
        await lightpush.serve_v2(stream, self._lightpush_publish, self._allowed(stream), **self._lp)

    async def _serve_store_v2(self, stream) -> None:
        await store_protocol.serve_v2(stream, self.store, self._allowed(stream), timeout_s=self.config.read_timeout_s,
                                      writes=self._store_flushed)

    async def _pruner(self) -> None:
        while True:
            async with self._store_lock:   # queries answered on the loop wait for it here, not on the store's lock
                await trio.to_thread.run_sync(self.store.prune)
            await trio.sleep(PRUNE_INTERVAL_S)

    # --- peers and metadata ---
    async def connect(self, addr: str, *, source: str = "static", enr=None) -> str:
        """Dial a multiaddr (protected, remembered in the peer store with its success or failure)."""
        return await self.peers.connect(addr, source=source, enr=enr)

    def connection_stats(self) -> dict:
        """Incoming connections by state and refusals by reason (connection_limits.InboundGate)."""
        return self.gate.stats()

    def connected_peers(self) -> list[str]:
        return [p.pretty() for p in self.host.get_connected_peers()]

    def _connections_changed(self) -> None:
        self._conn_changed.set()
        self._conn_changed = trio.Event()

    async def wait_connections(self, cond: Callable[[], bool], timeout: float = 10.0) -> None:
        """Return once `cond()` holds (e.g. a peer is gone from `connected_peers()`), re-checked each time one of
        this node's connections opens or closes; trio.TooSlowError after `timeout`."""
        with trio.fail_after(timeout):
            while not cond():
                await self._conn_changed.wait()

    def _on_connected(self, peer_id: ID) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(self._metadata_handshake, peer_id)

    async def _metadata_handshake(self, peer_id: ID) -> None:
        try:
            with trio.fail_after(10):
                cluster, _shards = await metadata.request(self.host, peer_id, self.config.cluster_id,
                                                          self.config.shards)
        except Exception as e:
            log.debug("metadata with %s failed: %s", peer_id, e)
            if self.config.metadata_disconnect_unsupported:
                await self._reject_peer(peer_id, None)
            return
        if not metadata.cluster_matches(self.config.cluster_id, cluster):
            await self._reject_peer(peer_id, cluster)

    async def _serve_metadata(self, stream) -> None:
        await metadata.serve(stream, self.config.cluster_id, self.config.shards, self._reject_peer,
                             timeout_s=self.config.read_timeout_s)

    async def _reject_peer(self, peer_id: ID, cluster: int | None) -> None:
        log.info("disconnecting %s: cluster %s, ours %s", peer_id, cluster, self.config.cluster_id)
        self.metadata_rejected.add(peer_id.pretty())
        self.peers.forget(peer_id.pretty())   # not ours to dial again, nor to hand out by peer exchange
        self._rejected_changed.set()
        self._rejected_changed = trio.Event()
        try:
            await self.host.disconnect(peer_id)
        except Exception as e:
            log.debug("disconnect %s: %s", peer_id, e)

    async def wait_rejected(self, peer_id: str, timeout: float = 10.0) -> None:
        """Wait until the metadata check has disconnected `peer_id`."""
        with trio.fail_after(timeout):
            while peer_id not in self.metadata_rejected:
                await self._rejected_changed.wait()

    # --- lightpush ---
    async def _lightpush_publish(self, pubsub_topic: str | None, msg: WakuMessage) -> int:
        if not pubsub_topic:
            if self.config.autosharding_shards:
                pubsub_topic = auto_shard_topic(msg.content_topic, self.config.cluster_id,
                                                self.config.autosharding_shards)
            else:
                pubsub_topic = self.config.topics()[0]
        if pubsub_topic not in self.config.topics() and pubsub_topic not in self.pubsub.topic_ids:
            raise lightpush.UnsupportedTopic(f"not relaying {pubsub_topic}")
        data = encode_message(msg)
        if len(data) > self.config.max_message_size:
            text = f"message is {len(data)} bytes (max {self.config.max_message_size})"
            log.info("lightpush: refused a message: %s", text)
            raise lightpush.PayloadTooLarge(text)
        # wait=False: a remote peer's work never waits for another's pace
        await self.publish(pubsub_topic, msg, wait=False, data=data, want_hash=False)
        return self.relay_peers(pubsub_topic)

    async def lightpush(self, peer_id: str, pubsub_topic: str | None, msg: WakuMessage):
        # the peer ID parsed once (fix 35's cache): a fresh ID per request also cost a base58 encode in new_stream
        return await lightpush.push_v3(self.host, parsed_peer_id(peer_id), pubsub_topic, msg)

    # --- store clients ---
    async def store_query_v3(self, peer_id: str, req):
        return await store_protocol.query_v3(self.host, ID.from_base58(peer_id), req)

    async def store_query_v2(self, peer_id: str, rpc):
        return await store_protocol.query_v2(self.host, ID.from_base58(peer_id), rpc)


def _noise(kp):
    from core.waku.libp2p_patches.host import noise_only_security
    return noise_only_security(kp)
