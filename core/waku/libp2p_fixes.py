"""Every py-libp2p 0.8.1 workaround the Waku node needs, in one place. Each names where the problem lives in
py-libp2p 0.8.1 (the pinned version) and has two tests in tests/unit/waku/test_libp2p_fixes.py: one that our fix
works, and one that asserts the upstream problem is still there, which FAILS when an upgrade fixes it (then
remove the workaround). No upstream issue was found for any of them in the issue tracker we could search
(libp2p/py-libp2p); they should be filed upstream.

1. GossipSub only accepts /meshsub/* ids in add_peer (pubsub/gossipsub.py GossipSub.add_peer, ValueError): map
   the Waku relay id to GossipSub v1.1 behaviour.
2. Pubsub.publish() always sets `from` and `seqno` (pubsub/pubsub.py Pubsub.publish; js-waku drops such messages
   under StrictNoSign): build the message ourselves (data + topic only) and push it.
3. The equivocation check keys on from+seqno, empty for every unsigned message (gossipsub.py
   GossipSub._check_equivocation): disabled.
4. The message cache keys on from+seqno too (pubsub/mcache.py MessageCache.put; IHAVE/IWANT would all collide):
   key it by the message id.
5. Silent drops: the 32-slot subscription channel (pubsub.py SUBSCRIPTION_CHANNEL_SIZE; we deliver through a
   callback instead), the 32-RPC per-peer send queue (pubsub/rpc_queue.py OutBoundQueueSize; enlarged, and our
   own publishes wait while a queue that is still moving is above a high-water mark; never for a peer that
   stopped reading, and lightpush never waits: libp2p_sendq.py), the 10 msg/s spam limit (GossipSub
   spam_protection_enabled=True by default; disabled through the constructor).
6. read_exactly() gives up after 100 partial reads (io/utils.py DEFAULT_RETRY_READ_COUNT; big messages over
   mplex): our request/response protocols use their own length-prefixed read loop with a size limit.
7. The default host accepts plaintext, secio and TLS (host defaults when sec_opt is not given): Noise only.
8. The swarm's auto-connector dials up to ~150 peers from the peerstore whenever it has fewer connections
   than min_connections (network/auto_connector.py AutoConnector.maybe_connect; including peers we
   disconnected for a cluster mismatch): disabled per host.
9. Every outgoing pubsub RPC carries the signed peer record, re-marshalled from the cached envelope each time
   (peer/peerstore.py env_to_send_in_RPC -> Envelope.marshal_envelope, a secp256k1 key serialization, ~0.4 ms):
   the bytes are cached per host for SENDER_RECORD_TTL_S.
10. A listener that cannot bind (port in use) is only logged and the host runs without that address
    (network/swarm.py Swarm.listen): check_listening() turns it into an error.
11. Swarm._handle_inbound_connection holds its inbound slot (`max_connections - min_connections`, 250 by
    default) until the *swarm* stops, not the connection: after 250 incoming connections in a node's life every
    new one is refused. It has no per-IP limit, and a silent socket holds its slot for `inbound_upgrade_timeout`
    (10 s). Replaced per swarm by our handler: a slot per connection for as long as it lives, per-IP and
    handshake limits with a short deadline (connection_limits.InboundGate). The remote IP of a WebSocket
    connection is read from trio-websocket (transport/websocket/connection.py
    P2PWebSocketConnection.get_remote_address() is a stub returning None).
12. `max_connections` also gates outbound dials (swarm.py `_dial_addr_single_attempt`, `add_conn`) and the
    pruner closes unprotected peers above the high watermark: `max_connections` = incoming limit + an outbound
    reserve, no pruning below it, and every peer we dial is protected in the swarm's tag store.
13. No per-connection stream limit in yamux or mplex (stream_muxer/yamux, stream_muxer/mplex; ConnectionConfig
    has no such field): inbound streams beyond the limit are reset.
14. GossipSub.publish queues every message for every connected peer not subscribed to its topic, "in case the
    subscription is still on its way" (gossipsub.py GossipSub.publish, second loop over pubsub.peers, and
    GossipSub._prune_pending_messages): a peer that relays another shard, e.g. a light client, gets a queue that
    is rebuilt by a list comprehension on every message, trimmed at 100 with a WARNING per message, and never
    sent. Ours: only peers identified less than PENDING_GRACE_S ago are queued, in a bounded deque that drops
    its oldest silently; expired entries are popped from its head.
15. yamux sends a WINDOW_UPDATE after nearly every read (stream_muxer/yamux/yamux.py
    YamuxStream._auto_tune_and_send_window_update; one frame per byte of a length prefix read byte by byte):
    credit only once half of the window is consumed, as go-yamux does (libp2p_yamux.py, test_libp2p_fix15.py).
16. Pubsub caps every RPC at 1 MiB both ways (pubsub/rpc_queue.py DefaultMaxMessageSize: the per-peer queue
    silently drops a bigger outbound RPC, gossipsub.py GossipSub.send_rpc -> _handle_dropped_rpc "oversized";
    Pubsub(max_inbound_rpc_size=) on reads, where a bigger one resets the peer's stream and drops the peer). An
    RPC carries the message plus ~300 bytes (topic, signed peer record), so a message within the Status fleet's
    1 MiB limit was silently never sent, and one from js-waku (its cap: 1 MiB encoded) cost us the peer. Both
    limits are relay_rpc_limit(max_message_size) = max(1 MiB, 2 x max_message_size) per node: the node's own
    message limit governs, and an oversize message up to twice the limit is read, refused by the relay
    validator with a log line naming its size, and the peer is kept.
17. A stopped host leaves its connections' sockets open: Swarm.run's shutdown (network/swarm.py, the `finally`
    after `manager.wait_finished()`) closes each connection with an `await` inside the cancelled scope, so the
    first checkpoint raises Cancelled and no socket is closed until garbage collection. The peer still sees a
    live connection that never reads; its relay send queue to us fills. close_connections() closes them,
    shielded and bounded, before the host exits (WakuNode.run).
18. Every incoming pubsub RPC's signed peer record is parsed and its secp256k1 signature verified again
    (pubsub/pubsub.py continuously_read_stream -> pubsub/utils.py maybe_consume_signed_record; ~0.4 ms per RPC,
    the largest single cost of a relayed message in the node's profile): the bytes last accepted from each
    peer are remembered per host for SENDER_RECORD_TTL_S, and the same bytes from the same peer are accepted
    without verifying them again (the counterpart of fix 9 on the receiving side).
19. The client side of multistream-select waits for the server's header before it proposes the protocol
    (protocol_muxer/multiselect_client.py select_one_of): two round trips and four frames before each store or
    lightpush request. libp2p_streams.open_stream sends header and protocol in one write (go-libp2p's and
    js-libp2p's pipelined form) and reads both answers.
20. trio's Lock.acquire yields to the scheduler even when the lock is free, and py-libp2p takes ~75 locks per
    request (yamux, NetStream state, TCP stream): those locks are swapped for ones that yield only when held
    (libp2p_locks.py). 21. Each stream opened or closed spawns a nursery and a task per notifee (Swarm._notify),
    all of which ignore stream events: stream events are called inline (libp2p_locks.py).
22-24, 26. Length prefixes read a byte per call, the server side of multistream-select answering in two frames,
    a task per relayed message, a walk over every peer per published message: libp2p_fastpath.py.
Fixes 10-13 are also exercised end to end in tests/integration/waku/test_faults.py and test_connection_limits.py.
"""
from __future__ import annotations

import contextvars
import hashlib
import logging
import time
import weakref
from collections import deque
from typing import Callable

import trio
from libp2p.crypto.keys import KeyPair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519
from libp2p.network.config import ConnectionConfig
from libp2p.network.connection.raw_connection import RawConnection
from libp2p.network.exceptions import SwarmException
from libp2p.rcmgr import Direction
from libp2p.custom_types import TProtocol
from libp2p.pubsub import gossipsub as _gossipsub_module
from libp2p.pubsub import pubsub as _pubsub_module
from libp2p.pubsub import rpc_queue
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
from libp2p.pubsub.mcache import CacheEntry, MessageCache
from libp2p.pubsub.pb import rpc_pb2
from libp2p.pubsub.pubsub import Pubsub
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_PROTOCOL_ID
from libp2p.security.noise.transport import Transport as NoiseTransport

from core.varint import DecodeError
from core.waku.libp2p_locks import install_inline_stream_notifications, install_uncontended_locks
from core.waku.libp2p_fastpath import InlinePushManager, gossip_publish, install_fast_rpc_reads, read_prefixed
from core.waku.libp2p_sendq import QueueWatch
from core.waku.libp2p_yamux import install_half_window_updates

log = logging.getLogger(__name__)

WAKU_RELAY_PROTOCOL = TProtocol("/vac/waku/relay/2.0.0")
SEND_QUEUE_SIZE = 4096          # per-peer outbound RPCs (py-libp2p: 32); the high-water mark: libp2p_sendq.py


def waku_message_id(msg: rpc_pb2.Message) -> bytes:
    """11/WAKU2-RELAY message id: sha256 of the data, raw 32 bytes."""
    return hashlib.sha256(msg.data).digest()


# --- fix 5b: per-peer send queue size (the default argument is bound at definition time) ---
def enlarge_send_queues(size: int = SEND_QUEUE_SIZE) -> None:
    defaults = rpc_queue.RpcQueue.__init__.__defaults__
    rpc_queue.RpcQueue.__init__.__defaults__ = (size, *defaults[1:])


class IdMessageCache(MessageCache):
    """fix 4: message cache keyed by the Waku message id instead of from+seqno."""

    def put(self, msg: rpc_pb2.Message) -> None:
        mid = waku_message_id(msg)
        if mid in self.msgs:
            return
        self.msgs[mid] = msg
        self.history[0].append(CacheEntry(mid, msg.topicIDs))


PENDING_GRACE_S = 5.0   # fix 14: how long after identify a peer's subscriptions may still be on their way


class _Discard:
    """fix 14: the pending "queue" of a settled peer: appends go nowhere."""

    def append(self, item) -> None:
        pass

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


class PendingQueues(dict):
    """fix 14: `_pending_messages` of WakuGossipSub. Peers identified within the grace time (or not identified
    yet) get a bounded deque; settled peers get a _Discard, which is not stored (so `peer in queues` stays False
    and flush_pending_messages has nothing to send)."""

    def __init__(self, router: "WakuGossipSub"):
        super().__init__()
        self._router = router

    def __missing__(self, peer_id):
        if self._router.pending_settled(peer_id):
            return _Discard()
        q = self[peer_id] = deque(maxlen=self._router._max_pending_messages_per_peer)
        return q


class WakuGossipSub(GossipSub):
    """GossipSub v1.1 on /vac/waku/relay/2.0.0 with nwaku's parameters (fixes 1, 3, 4, 5c, 14)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, **kw):
        params = dict(protocols=[WAKU_RELAY_PROTOCOL], degree=6, degree_low=4, degree_high=8,
                      gossip_window=3, gossip_history=5, heartbeat_initial_delay=0.1, heartbeat_interval=1,
                      time_to_live=60, spam_protection_enabled=False, adaptive_gossip_enabled=False,
                      eclipse_protection_enabled=False)
        params.update(kw)
        super().__init__(**params)
        self.mcache = IdMessageCache(params["gossip_window"], params["gossip_history"])
        self._clock = clock
        self._identified_at: dict = {}
        self._recent: dict = {}   # fix 26: peers identified within PENDING_GRACE_S
        self._pending_messages = PendingQueues(self)

    def add_peer(self, peer_id, protocol_id) -> None:
        if protocol_id == WAKU_RELAY_PROTOCOL:
            protocol_id = PROTOCOL_ID_V11
        super().add_peer(peer_id, protocol_id)
        self._identified_at[peer_id] = self._recent[peer_id] = self._clock()

    def remove_peer(self, peer_id) -> None:
        super().remove_peer(peer_id)
        self._identified_at.pop(peer_id, None)
        self._recent.pop(peer_id, None)

    publish = gossip_publish   # fix 26 (libp2p_fastpath.py)

    def recently_identified(self) -> list:
        """fix 26: peers identified within PENDING_GRACE_S (the only ones fix 14 still queues for)."""
        for p in [p for p, at in self._recent.items() if self._clock() - at > PENDING_GRACE_S]:
            del self._recent[p]
            self._pending_messages.pop(p, None)   # settled: what upstream's walk would have pruned
        return list(self._recent)

    def pending_settled(self, peer_id) -> bool:
        """fix 14: identified long enough ago that a missing subscription means "not subscribed"."""
        at = self._identified_at.get(peer_id)
        return at is not None and self._clock() - at > PENDING_GRACE_S

    def _prune_pending_messages(self, peer_id) -> None:
        """fix 14: O(expired) instead of O(queue) per message, no WARNING (the deque's maxlen drops the oldest)."""
        queue = self._pending_messages.get(peer_id)
        if queue is None:
            return
        if self.pending_settled(peer_id):  # its subscriptions are known by now: standard GossipSub rules
            self._pending_messages.pop(peer_id, None)
            return
        oldest_allowed = time.time() - self._pending_messages_ttl  # upstream stamps entries with time.time()
        while queue and queue[0][0] < oldest_allowed:
            queue.popleft()
        if not queue:
            self._pending_messages.pop(peer_id, None)

    def _check_equivocation(self, msg: rpc_pb2.Message) -> bool:
        return True  # StrictNoSign: no from/seqno to key on; duplicates are caught by the seen cache


def relay_rpc_limit(max_message_size: int) -> int:
    """fix 16: the largest pubsub RPC sent or read, for a node whose message limit is `max_message_size`."""
    return max(rpc_queue.DefaultMaxMessageSize, 2 * max_message_size)


class _SizedQueues(dict):
    """fix 16: Pubsub creates each peer's RpcQueue with the 1 MiB default; every queue stored here gets ours.
    fix 5b: and is watched for progress (libp2p_sendq.QueueWatch)."""

    def __init__(self, max_rpc_size: int, watch: QueueWatch):
        super().__init__()
        self.max_rpc_size, self.watch = max_rpc_size, watch

    def __setitem__(self, peer_id, queue) -> None:
        queue.max_message_size = self.max_rpc_size
        self.watch.watch(queue)
        super().__setitem__(peer_id, queue)


class WakuPubsub(Pubsub):
    """Pubsub with StrictNoSign and sha256 ids that hands every validated message to `on_message`
    synchronously (fix 5a), publishes unsigned messages (fix 2) and sends and reads RPCs up to `max_rpc_size`
    (fix 16; default: for 1 MiB messages)."""

    def __init__(self, host, router, on_message: Callable[[str, rpc_pb2.Message], None], *,
                 max_rpc_size: int | None = None, **kw):
        max_rpc_size = max_rpc_size or relay_rpc_limit(1024 * 1024)
        super().__init__(host, router, strict_signing=False, msg_id_constructor=waku_message_id,
                         seen_ttl=120, cache_size=None, max_inbound_rpc_size=max_rpc_size, **kw)
        self.send_watch = QueueWatch()
        self.peer_queues = _SizedQueues(max_rpc_size, self.send_watch)
        self._on_message = on_message

    @property
    def manager(self):
        """fix 24: the service manager, with relayed messages queued for one worker (libp2p_fastpath.py)."""
        inline = self.__dict__.get("_inline_manager")
        if inline is None or inline._manager is not self._manager:
            inline = self.__dict__["_inline_manager"] = InlinePushManager(self._manager, self)
        return inline

    def notify_subscriptions(self, publish_message: rpc_pb2.Message) -> None:
        for topic in publish_message.topicIDs:
            if topic in self.topic_ids:
                self._on_message(topic, publish_message)

    def send_queue_depth(self) -> int:
        return max((len(q) for q in self.peer_queues.values()), default=0)

    async def publish_unsigned(self, topic: str, data: bytes, *, wait: bool = True) -> None:
        """`wait`: back-pressure (fix 5b) from peers that are still reading; False for remote peers' work."""
        if wait:
            await self.send_watch.wait_for_room(self.peer_queues.values)
        await self.push_msg(self.my_id, rpc_pb2.Message(data=data, topicIDs=[topic]))


def noise_only_security(key_pair: KeyPair) -> dict:
    """fix 7: Noise is the only security protocol offered or accepted."""
    return {NOISE_PROTOCOL_ID: NoiseTransport(key_pair, noise_privkey=new_x25519().private_key)}


# --- fix 6: our own length-prefixed framing ---
class FrameTooLarge(DecodeError):
    """A length prefix above the limit; the body has not been read (`size` bytes still follow)."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"frame of {size} bytes exceeds {limit}")
        self.size, self.limit = size, limit


async def read_length_prefixed(stream, max_size: int) -> bytes:
    """Read one uvarint-length-prefixed frame (fix 22: one read when it has arrived); raises DecodeError on a bad
    prefix or EOF, FrameTooLarge on an oversize prefix (consumed; the body is not)."""
    return await read_prefixed(stream, max_size, eof=DecodeError, bad_prefix=DecodeError,
                               too_large=lambda n: FrameTooLarge(n, max_size))



async def write_length_prefixed(stream, data: bytes) -> None:
    from core.varint import write_varint
    await stream.write(write_varint(len(data)) + data)


def disable_auto_connector(host) -> None:
    """fix 8: no automatic dialling of peerstore peers; the node decides whom to connect to."""
    async def _no_dials() -> None:
        return None
    host.get_network().auto_connector.maybe_connect = _no_dials


def check_listening(host, requested) -> None:
    """fix 10: raise OSError unless every requested transport (TCP, WebSocket) got a listen address."""
    have = [str(a) for a in host.get_addrs()]
    for want in requested:
        ws = "/ws" in str(want)
        if not any(("/ws" in a) == ws and "/tcp/" in a for a in have):
            raise OSError(f"could not listen on {want} (address in use?)")


SENDER_RECORD_TTL_S = 30.0
_upstream_env_to_send = _pubsub_module.env_to_send_in_RPC
_sender_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cached_env_to_send_in_RPC(host) -> tuple[bytes, bool]:
    """fix 9: the signed peer record attached to pubsub RPCs, cached per host."""
    now = time.monotonic()
    hit = _sender_records.get(host)
    if hit is not None and now - hit[0] < SENDER_RECORD_TTL_S:
        return hit[1]
    value = _upstream_env_to_send(host)
    _sender_records[host] = (now, value)
    return value


def install_sender_record_cache() -> None:
    _pubsub_module.env_to_send_in_RPC = cached_env_to_send_in_RPC
    _gossipsub_module.env_to_send_in_RPC = cached_env_to_send_in_RPC


_upstream_consume_record = _pubsub_module.maybe_consume_signed_record
_accepted_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # host -> {peer: (time, bytes)}
MAX_ACCEPTED_RECORDS = 4096   # per host; the table is emptied when it is full (they are re-verified once)


def cached_consume_signed_record(msg, host, peer_id=None) -> bool:
    """fix 18: a peer's signed record is verified (and stored) once per SENDER_RECORD_TTL_S, not per RPC."""
    if peer_id is None or not msg.HasField("senderRecord"):
        return _upstream_consume_record(msg, host, peer_id)
    accepted = _accepted_records.setdefault(host, {})
    now = time.monotonic()
    hit = accepted.get(peer_id)
    if hit is not None and now - hit[0] < SENDER_RECORD_TTL_S and hit[1] == msg.senderRecord:
        return True
    ok = _upstream_consume_record(msg, host, peer_id)
    if ok:
        if len(accepted) >= MAX_ACCEPTED_RECORDS:
            accepted.clear()
        accepted[peer_id] = (now, msg.senderRecord)
    return ok


def install_verified_record_cache() -> None:
    _pubsub_module.maybe_consume_signed_record = cached_consume_signed_record
    _gossipsub_module.maybe_consume_signed_record = cached_consume_signed_record


# --- fixes 11-13: connection limits (policy in connection_limits.py) ---
def connection_config(limits) -> ConnectionConfig:
    """fix 12: py-libp2p's total cap = incoming limit + outbound reserve; the pruner never trims below it."""
    total = limits.max_connections
    return ConnectionConfig(max_connections=total, min_connections=0, low_watermark=total, high_watermark=total,
                            inbound_upgrade_timeout=limits.handshake_timeout_s)


_inbound_ticket: contextvars.ContextVar = contextvars.ContextVar("waku_inbound_ticket", default=None)


def _remote_ip(swarm, rwc) -> str:
    try:
        maddr = swarm._build_remote_multiaddr(rwc)
    except Exception:
        maddr = None
    if maddr is None:  # WebSocket: P2PWebSocketConnection.get_remote_address() is a stub returning None
        try:  # trio-websocket's stream: a SocketStream, or (shared port) a PeekableStream with .socket
            return str(rwc._ws_connection._stream.socket.getpeername()[0])
        except Exception:
            return "?"
    parts = str(maddr).split("/")
    return parts[2] if len(parts) > 2 else "?"


async def _close_quietly(closer) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(2):
        try:
            await closer.close()
        except Exception:
            pass


async def close_connections(swarm, timeout_s: float = 2.0, peer_id=None) -> None:
    """fix 17: close every connection's socket (or only `peer_id`'s: a stuck relay peer, libp2p_sendq.py),
    shielded (the node is usually being cancelled) and bounded, so that its peers see it go. The socket, not the
    muxer: a graceful yamux close waits for the connection's write lock, which a writer stuck on a peer that
    reads nothing holds forever."""
    with trio.CancelScope(shield=True), trio.move_on_after(timeout_s):
        for pid, conns in list(swarm.connections.items()):
            if peer_id is not None and pid != peer_id:
                continue
            for conn in list(conns):
                try:
                    await conn.muxed_conn.secured_conn.close()
                except Exception as e:  # noqa: BLE001 - already closed or broken: nothing left to release
                    log.debug("closing a connection at stop: %s", e)


def conn_remote_ip(muxed_conn) -> str | None:
    """The remote IP of an incoming connection as the gate saw it at accept (None: one we dialled)."""
    return getattr(muxed_conn, "_waku_remote_ip", None)


def incoming_unprotected(swarm, is_protected) -> int:
    """Established incoming connections of peers that are not protected."""
    n = 0
    for peer, conns in swarm.connections.items():
        if is_protected(peer):
            continue
        n += sum(1 for c in conns if getattr(c, "direction", None) == Direction.INBOUND)
    return n


def install_connection_limits(swarm, gate) -> None:
    """fixes 11 and 13: our inbound handler (per connection slot, per-IP and handshake limits through `gate`,
    an `InboundGate`) and an inbound stream limit per connection."""
    upstream_add_conn = swarm.add_conn

    async def handle_inbound(rwc, maddr) -> None:
        ticket = gate.open(_remote_ip(swarm, rwc))
        if ticket is None:
            await _close_quietly(rwc)
            return
        try:
            remote = swarm._build_remote_multiaddr(rwc)
            if remote is not None and not await swarm.connection_gate.is_allowed(remote):
                return
            with ticket.scope:
                _inbound_ticket.set(ticket)
                await swarm.upgrade_inbound_raw_conn(RawConnection(rwc, False), maddr)
                if ticket.conn is not None:
                    await ticket.conn.event_closed.wait()  # upstream waits for the swarm to stop (fix 11)
        except Exception as e:
            log.debug("incoming connection from %s: %s", ticket.ip, e)
        finally:
            gate.close(ticket)
            await _close_quietly(rwc)

    async def add_conn(muxed_conn, direction="unknown"):
        ticket = _inbound_ticket.get()
        if direction != "inbound" or ticket is None or ticket.conn is not None:
            return await upstream_add_conn(muxed_conn, direction)
        if not gate.established(ticket, muxed_conn.peer_id):
            await _close_quietly(muxed_conn)
            raise SwarmException("incoming connection limit reached")
        muxed_conn._waku_remote_ip = ticket.ip  # for the per-address rate limit (conn_remote_ip)
        ticket.conn = await upstream_add_conn(muxed_conn, direction)
        return ticket.conn

    upstream_stream_handler = swarm.common_stream_handler

    async def stream_handler(net_stream) -> None:
        conn = getattr(net_stream, "swarm_conn", None)
        if conn is not None:
            inbound = sum(1 for s in conn.streams if getattr(s, "_direction", None) == Direction.INBOUND)
            if inbound > gate.limits.max_streams_per_conn:
                gate.refused["streams"] += 1
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    try:
                        await net_stream.reset()
                    except Exception:
                        pass
                return
        await upstream_stream_handler(net_stream)

    swarm._handle_inbound_connection = handle_inbound
    swarm.add_conn = add_conn
    swarm.common_stream_handler = stream_handler


enlarge_send_queues()
install_fast_rpc_reads()     # fix 22
install_sender_record_cache()
install_verified_record_cache()
install_half_window_updates()
install_uncontended_locks()
install_inline_stream_notifications()
