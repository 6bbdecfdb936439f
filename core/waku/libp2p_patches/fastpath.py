"""Fixes 23, 24 and 26 (fix 22 is in framing.py): fewer frames and tasks per request and per relayed message.

Found by profiling the node under the load benchmark's floods (cProfile on its trio thread,
`ARCHIVIST_BENCH_WAKU_PROFILE`, docs/BENCHMARKS.md "Waku load"):

23. The server side of multistream-select (protocol_muxer/multiselect.py Multiselect.negotiate) writes its
    header, then reads the client's header and protocol one varint byte at a time, then echoes the protocol:
    two frames out (each a yamux frame, a Noise message and a socket send) and ~6 reads per inbound stream.
    `negotiate_inbound` reads each line with one read and, when the client pipelined its protocol after its
    header (ours since fix 19, go-libp2p and js-libp2p), answers header and protocol in one write. A client that
    waits for our header first (py-libp2p's own) still gets it before we wait for its protocol.
24. Every relayed message is handed to `Pubsub.push_msg` in a new managed task (pubsub.py
    continuously_read_stream -> manager.run_task): task creation, scheduling and the service manager's
    bookkeeping per message. `InlinePushManager` queues them (bounded, oldest kept) for one worker task that
    validates and forwards them in arrival order, as go-libp2p-pubsub's validation pipeline does.
26. GossipSub.publish (pubsub/gossipsub.py), after sending, walks every connected peer for each message to
    queue it for peers whose subscription may still be on its way (fix 14 keeps that queue for peers identified
    less than PENDING_GRACE_S ago and discards it for the rest, but the walk, an ID built per peer and a
    pruning call each, stayed: ~0.3 ms per lightpush request with 10 light clients connected). `gossip_publish`
    is upstream's publish with that walk over the recently identified peers only.
(25, a 64 KiB read-ahead on the TCP socket instead of two receives per Noise frame, was tried and taken out: with
no scheduling point between the frames it read ahead, a connection closed right after an answer was torn down
before the waiting task read that answer, and the metadata test lost its cluster answer about 1 run in 5.)
"""
from __future__ import annotations

import logging
import time
from collections import deque

import trio
from libp2p.custom_types import TProtocol
from libp2p.peer.id import ID
from libp2p.protocol_muxer.exceptions import MultiselectError
from libp2p.pubsub import gossipsub as g
from libp2p.pubsub.pb import rpc_pb2

from core.varint import write_varint
from core.waku.libp2p_patches import oneframe
from core.waku.libp2p_patches.framing import buffered, read_prefixed

log = logging.getLogger(__name__)

MULTISTREAM = b"/multistream/1.0.0\n"
MAX_LINE = 1024              # a multistream-select line (protocol id + newline)
NA = b"na\n"


async def negotiate_inbound(stream, handlers: dict, timeout_s: float):
    """Server side of multistream-select (fix 23): (protocol, handler). Raises MultiselectError. For a handler
    marked `oneframe.answers_in_one_frame` whose request is already buffered behind the proposal, the echo is kept
    for its answer (fix 30)."""
    def line(text: bytes) -> bytes:
        return write_varint(len(text)) + text

    async def read_line() -> bytes:
        return await read_prefixed(stream, MAX_LINE, eof=MultiselectError, bad_prefix=MultiselectError,
                                   too_large=lambda n: MultiselectError(f"line of {n} bytes"))
    try:
        with trio.fail_after(timeout_s):
            got = await read_line()
            if got != MULTISTREAM:
                raise MultiselectError(f"multiselect protocol ID mismatch: {got[:64]!r}")
            pending = line(MULTISTREAM)             # our header: sent with the first answer, or before we wait
            while True:
                if pending and not buffered(stream):
                    await stream.write(pending)     # the client waits for our header before proposing
                    pending = b""
                cmd = await read_line()
                proto = cmd[:-1].decode(errors="replace") if cmd.endswith(b"\n") else None
                if proto is not None and TProtocol(proto) in handlers:
                    if oneframe.wants_deferred_echo(handlers[TProtocol(proto)]) and buffered(stream):
                        oneframe.defer(stream, pending + line(cmd))     # fix 30: sent with the answer
                    else:
                        await stream.write(pending + line(cmd))
                    return TProtocol(proto), handlers[TProtocol(proto)]
                if cmd == b"ls\n":
                    listing = "".join(f"{p}\n" for p in handlers if p is not None).encode()
                    await stream.write(pending + line(listing))
                else:
                    await stream.write(pending + line(NA))
                pending = b""
    except trio.TooSlowError:
        raise MultiselectError("handshake read timeout") from None
    except MultiselectError:
        raise
    except Exception as e:  # noqa: BLE001 - a broken or reset stream: negotiation failed
        raise MultiselectError(str(e) or type(e).__name__) from e


def install_fast_negotiation(host) -> None:
    """fix 23 for one host: inbound streams are negotiated by negotiate_inbound, then handled as upstream's
    BasicHost._swarm_stream_handler does (reset when negotiation fails)."""
    swarm = host.get_network()
    cfg = getattr(swarm, "connection_config", None)
    timeout_s = getattr(cfg, "inbound_stream_protocol_negotiation_timeout", 0) or host.negotiate_timeout

    async def handle(net_stream) -> None:
        try:
            protocol, handler = await negotiate_inbound(net_stream, host.multiselect.handlers, timeout_s)
        except MultiselectError as e:
            log.debug("failed to accept a stream from %s: %s", net_stream.muxed_conn.peer_id, e)
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                try:
                    await net_stream.reset()
                except Exception:  # noqa: BLE001 - already gone
                    pass
            return
        net_stream.set_protocol(protocol)
        await handler(net_stream)

    swarm.common_stream_handler = handle


PUSH_QUEUE = 8192   # relayed messages waiting for validation (fix 24); beyond, new ones are dropped
PUSH_TURN_S = 0.002  # the worker validates and forwards messages for this long, then lets the others run: every
                     # task that yields (a store query's answer) waits for whole passes of the loop, so each
                     # step is kept short (it was 16 messages: 5-90 ms a turn under a loaded machine's relay flood)


class InlinePushManager:
    """fix 24: the pubsub's service manager, except that `run_task(pubsub.push_msg, peer, msg)` queues the
    message for one worker task instead of spawning a task per message."""

    def __init__(self, manager, pubsub, limit: int = PUSH_QUEUE):
        self._manager, self._pubsub, self._limit = manager, pubsub, limit
        self._queue: deque = deque()
        self._wakeup = trio.Event()
        self._worker = False
        self.dropped = 0

    def __getattr__(self, name):
        return getattr(self._manager, name)

    def run_task(self, async_fn, *args, **kw):
        if getattr(async_fn, "__func__", None) is not type(self._pubsub).push_msg or kw:
            return self._manager.run_task(async_fn, *args, **kw)
        if len(self._queue) >= self._limit:
            self.dropped += 1
            log.debug("relay: %d messages waiting for validation; dropped one from %s", self._limit, args[0])
            return None
        self._queue.append(args)
        self._wakeup.set()
        if not self._worker:
            self._worker = True
            self._manager.run_daemon_task(self._work)
        return None

    async def _work(self) -> None:
        push, clock = self._pubsub.push_msg, time.perf_counter
        while True:
            turn_end = clock() + PUSH_TURN_S
            while self._queue:
                forwarder, msg = self._queue.popleft()
                try:
                    await push(forwarder, msg)
                except Exception:  # noqa: BLE001 - as a failed task upstream: logged, the others go on
                    log.exception("relay: pushing a message from %s failed", forwarder)
                if clock() >= turn_end:
                    await trio.lowlevel.checkpoint()   # push_msg need not yield: let the others run meanwhile
                    turn_end = clock() + PUSH_TURN_S
            self._wakeup = trio.Event()
            if not self._queue:
                await self._wakeup.wait()


async def gossip_publish(self, msg_forwarder, pubsub_msg) -> None:
    """fix 26: GossipSub.publish of py-libp2p 0.8.1 (same steps, same order), except that the optimistic queue
    for peers not (yet) known to be subscribed walks `self.recently_identified()` instead of every peer."""
    if not self._check_spam_protection(msg_forwarder, pubsub_msg) or not self._check_equivocation(pubsub_msg):
        return
    self.mcache.put(pubsub_msg)
    pubsub = self.pubsub
    msg_id = pubsub.get_message_id(pubsub_msg) if pubsub is not None else pubsub_msg.from_id + pubsub_msg.seqno
    origin = ID(pubsub_msg.from_id)
    peers_gen = self._get_peers_to_send(pubsub_msg.topicIDs, msg_forwarder=msg_forwarder, origin=origin,
                                        msg_id=msg_id)
    rpc_msg = rpc_pb2.RPC(publish=[pubsub_msg])
    if isinstance(pubsub, g.Pubsub):
        rpc_msg.senderRecord, _ = g.env_to_send_in_RPC(pubsub.host)
    await self._emit_idontwant_for_message(msg_id, pubsub_msg.topicIDs)
    await self._notify_observers(pubsub_msg.topicIDs, msg_id)
    for peer_id in peers_gen:
        if self.pubsub is None:
            raise g.NoPubsubAttached
        if peer_id not in self.pubsub.peers:
            continue
        if self.scorer is not None and not self.scorer.allow_publish(peer_id, list(pubsub_msg.topicIDs)):
            continue
        self.send_rpc(peer_id, rpc_msg)
    if pubsub is not None:
        skip = (msg_forwarder, origin)
        queued: set = set()
        for topic in pubsub_msg.topicIDs:
            topic_peers = pubsub.peer_topics.get(topic, ())
            for peer_id in topic_peers:     # in the topic, protocol not identified yet
                if peer_id in skip or peer_id in self.peer_protocol or peer_id in self.direct_peers \
                        or peer_id in queued:
                    continue
                self._prune_pending_messages(peer_id)
                self._pending_messages[peer_id].append((time.time(), rpc_msg))
                queued.add(peer_id)
            for peer_id in self.recently_identified():   # upstream: every peer in pubsub.peers
                if peer_id not in pubsub.peers or peer_id in skip or peer_id in self.direct_peers \
                        or peer_id in queued or peer_id in topic_peers:
                    continue
                self._prune_pending_messages(peer_id)
                self._pending_messages[peer_id].append((time.time(), rpc_msg))
                queued.add(peer_id)
    now = time.time()
    for topic in pubsub_msg.topicIDs:
        self.time_since_last_publish[topic] = int(now)
        self.recent_message_deliveries[topic].append(now)

