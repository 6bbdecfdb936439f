"""EmbeddedWakuBackend: the trio WakuNode in its own thread behind a thread-safe, blocking API.

Calls from any thread are marshalled into trio with trio.from_thread.run. Received messages leave the trio
thread through a queue.Queue and are handed to subscriber callbacks on one dispatcher thread, so a slow
callback never stalls the network.
"""
from __future__ import annotations

import logging
import queue
import threading
import uuid
from typing import Iterator, Sequence

import trio

from core.pb import waku_store_v2beta4_pb2 as v2pb
from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.backend import MessageCallback, Subscription
from core.waku.errors import (CANCELLED, StoreQueryError, WakuError, WakuPeerError,  # noqa: F401 - re-exported
                              peer_error)
from core.waku.message import WakuMessage, decode_message
from core.waku.node import NodeConfig, WakuNode
from core.waku.relay import ReceivedMessage

log = logging.getLogger(__name__)
STOP_GRACE_S = 3.0   # s: a graceful stop (connections closed, bounded at 2 s by fix 17) before everything is cancelled


class EmbeddedWakuBackend:
    def __init__(self, config: NodeConfig | None = None, *, call_timeout: float = 30.0):
        self.config = config or NodeConfig()
        self.call_timeout = call_timeout
        self.node: WakuNode | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._events: queue.Queue = queue.Queue()
        self._subs: list[Subscription] = []
        self._subs_lock = threading.Lock()
        self._dispatcher: threading.Thread | None = None
        self._queries: set[trio.CancelScope] = set()   # store queries (and their dials) under way, in the trio thread
        self._queries_closed = False

    # --- lifecycle ---
    def start(self, timeout: float = 30.0) -> None:
        self._thread = threading.Thread(target=self._thread_main, name="waku-node", daemon=True)
        self._thread.start()
        self._dispatcher = threading.Thread(target=self._dispatch, name="waku-events", daemon=True)
        self._dispatcher.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("waku node did not start")
        if self._error is not None:
            raise RuntimeError(f"waku node failed to start: {self._error}") from self._error

    def _thread_main(self) -> None:
        async def main():
            self._token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as scope:
                self._cancel = scope
                self.node = WakuNode(self.config)   # on_message set while someone subscribes (_deliver_if_wanted)
                self._deliver_if_wanted()
                async with trio.open_nursery() as n:
                    await n.start(self.node.run)
                    self._ready.set()
        try:
            _run_profiled(main)
        except BaseException as e:  # noqa: BLE001 - reported to start()
            self._error = e
            log.exception("waku node stopped with an error")
        finally:
            self._ready.set()

    def stop(self, timeout: float = 15.0) -> None:
        if self._thread is None:
            return
        if self._token is not None and self._thread.is_alive():
            try:
                trio.from_thread.run_sync(self._begin_stop, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout)
        self._events.put(None)
        if self._dispatcher is not None:
            self._dispatcher.join(timeout)
        self._thread = None

    def _begin_stop(self) -> None:
        """The node closes its connections while it still runs (WakuNode.run), then ends; everything is cancelled
        after STOP_GRACE_S if that has not happened by then (or at once if the node is not serving yet)."""
        if self.node is not None and self.node.request_stop():
            self._cancel.deadline = min(self._cancel.deadline, trio.current_time() + STOP_GRACE_S)
        else:
            self._cancel.cancel()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def _call(self, fn, *args):
        if self._token is None:
            raise RuntimeError("node not started")

        async def bounded():
            with trio.fail_after(self.call_timeout):
                return await fn(*args)
        return trio.from_thread.run(bounded, trio_token=self._token)

    def _peer_call(self, op: str, peer: str | None, fn, *args):
        """_call for an exchange with a remote peer: every network failure becomes one WakuPeerError."""
        try:
            return self._call(fn, *args)
        except BaseException as e:  # noqa: BLE001 - mapped or re-raised unchanged
            err = peer_error(e, peer, op, self.call_timeout)
            if err is e:
                raise
            raise err from e

    async def _cancellable(self, op: str, peer: str | None, fn, *args):
        """`fn(*args)` in the trio thread, ended at once by cancel_queries (WakuPeerError, kind CANCELLED)."""
        if not self._queries_closed:
            with trio.CancelScope() as scope:
                self._queries.add(scope)
                try:
                    return await fn(*args)
                finally:
                    self._queries.discard(scope)
        raise WakuPeerError(peer, op, CANCELLED, "the node is stopping")

    def cancel_queries(self) -> None:
        """End every store query under way now, and refuse new ones (each raises WakuPeerError, kind CANCELLED).
        For the engine's stop: a query whose peer does not answer would otherwise hold its community's queue, and
        so the stop, for up to call_timeout per page. Relay, lightpush and the node itself go on until stop()."""
        self._queries_closed = True
        if self._token is None:
            return

        def cancel_all() -> None:
            for scope in list(self._queries):
                scope.cancel()
        try:
            trio.from_thread.run_sync(cancel_all, trio_token=self._token)
        except trio.RunFinishedError:
            pass

    def _sync(self, fn, *args):
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    # --- identity and peers ---
    @property
    def peer_id(self) -> str:
        return self.node.peer_id

    @property
    def listen_addrs(self) -> list[str]:
        return self._sync(self.node.listen_addrs)

    def ws_addr(self) -> str:
        return next(a for a in self.listen_addrs if "/ws/" in a)

    def add_peer(self, multiaddr: str) -> str:
        """Dial a peer; returns its peer id. Raises WakuPeerError (kind "unreachable", "bad address", ...)."""
        return self._peer_call("dial", multiaddr, self.node.connect, multiaddr)

    def connected_peers(self) -> list[str]:
        return self._sync(self.node.connected_peers)

    # --- discovery and the peer store (core/waku/peer_manager.py) ---
    def discover_dns(self, url: str, resolver=None, *, dial: bool = True, max_new: int = 10, **bounds) -> list:
        """Walk an enrtree, remember its records of our cluster (and serve them by peer exchange), and with
        `dial` connect to up to `max_new` of them. Returns the records (core.waku.enr.Enr). Raises
        DnsDiscoveryError when the tree's root cannot be read or verified."""
        recs = self._call(lambda: self.node.peers.discover_dns(url, resolver, **bounds))
        if dial:
            self._call(self.node.connect_discovered, recs, max_new, "dns")
        return recs

    def exchange_peers(self, peer_id: str, num_peers: int = 10, *, dial: bool = True, max_new: int = 10) -> list:
        """Ask a peer for records (peer exchange), remember them, and with `dial` connect to new ones."""
        recs = self._peer_call("peer exchange", peer_id, self.node.exchange_peers, peer_id, num_peers)
        if dial:
            self._call(self.node.connect_discovered, recs, max_new, "px")
        return recs

    def maintain_peers(self) -> list[str]:
        """One peer-maintenance round now (the node runs one every peer_check_interval_s); the peers reached."""
        return self._call(self.node.peers.maintain)

    def stored_peers(self) -> list:
        """The peer store's entries (core.waku.peer_store.StoredPeer)."""
        return self._sync(self.node.peers.store.peers)

    def wait_for_relay_peer(self, peer_id: str, pubsub_topic: str | None = None, timeout: float = 10.0) -> None:
        self._call(self.node.wait_for_relay_peer, peer_id, pubsub_topic or self.config.topics()[0], timeout)

    # --- relay ---
    def subscribe(self, pubsub_topic: str, content_topics: Sequence[str], callback: MessageCallback) -> Subscription:
        sub = Subscription(pubsub_topic, content_topics, callback, self)
        with self._subs_lock:
            self._subs.append(sub)
            self._deliver_if_wanted()
        self._call(self.node.subscribe_topic, pubsub_topic)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._subs_lock:
            if sub in self._subs:
                self._subs.remove(sub)
            self._deliver_if_wanted()

    def _deliver_if_wanted(self) -> None:
        """Relayed messages become events only while there are subscriptions: a node nobody listens to (a plain
        `archivist wakunode`) does not hash each message for an event and wake the dispatcher thread for it."""
        if self.node is not None:
            self.node.on_message = self._events.put if self._subs else None

    def publish(self, pubsub_topic: str, message: WakuMessage) -> bytes:
        """Validate and relay; returns the message hash. Blocks while send queues are full (back-pressure)."""
        return self._call(self.node.publish, pubsub_topic, message)

    def _dispatch(self) -> None:
        while True:
            rm = self._events.get()
            if rm is None:
                return
            with self._subs_lock:
                subs = [s for s in self._subs if s.matches(rm)]
            for s in subs:
                try:
                    s.callback(rm)
                except Exception:  # noqa: BLE001 - a subscriber bug must not stop delivery
                    log.exception("waku subscriber failed")

    # --- lightpush ---
    def lightpush(self, peer_id: str, pubsub_topic: str | None, message: WakuMessage):
        """The peer's LightpushResponse (its status_code says whether it took the message); WakuPeerError when
        there is no answer."""
        return self._peer_call("lightpush", peer_id, self.node.lightpush, peer_id, pubsub_topic, message)

    # --- store ---
    def flush_store(self) -> None:
        self._call(self.node.flush_store)

    def query_store(self, peer: str | None, content_topics: Sequence[str], start: int | None = None,
                    end: int | None = None, *, pubsub_topic: str | None = None, page_size: int = 100,
                    forward: bool = True, version: int = 3) -> Iterator[ReceivedMessage]:
        """All matching messages from a store peer (peer id, or a multiaddr to dial), fetched page by page.
        peer=None queries our own store (a node without a store holds nothing: no messages). Pages are fetched
        lazily as the iterator is consumed.
        Raises WakuPeerError when the peer cannot be reached, does not serve store, goes away or does not answer
        within call_timeout, and StoreQueryError when it answers with another status than 200."""
        if peer is not None and peer.startswith("/"):
            peer = self._peer_call("dial", peer, self._cancellable, "dial", peer, self.node.connect, peer)
        if peer is None:
            if self.config.store is None:
                return
            self.flush_store()  # the local store sees every message relayed so far
        if version == 2:
            yield from self._query_v2(peer, content_topics, start, end, pubsub_topic, page_size, forward)
            return
        cursor = None
        while True:
            req = v3pb.StoreQueryRequest(request_id=uuid.uuid4().hex, include_data=True,
                                         content_topics=list(content_topics), pagination_forward=forward,
                                         pagination_limit=page_size)
            if pubsub_topic:
                req.pubsub_topic = pubsub_topic
            if start is not None:
                req.time_start = start
            if end is not None:
                req.time_end = end
            if cursor is not None:
                req.pagination_cursor = cursor
            if peer is None:
                from core.waku.store_query import handle_store_v3
                resp = handle_store_v3(self.config.store, req)
            else:
                resp = self._peer_call("store query", peer, self._cancellable, "store query", peer,
                                       self.node.store_query_v3, peer, req)
            if resp.status_code != 200:
                raise StoreQueryError(resp.status_code, resp.status_desc, peer)
            for kv in resp.messages:
                kv.message.DiscardUnknownFields()     # parsed already: what protobuf skipped is not walked again
                m = decode_message(kv.message.SerializeToString(), require_presence=False)
                yield ReceivedMessage(kv.pubsub_topic, m, kv.message_hash)
            if not resp.HasField("pagination_cursor") or not resp.messages:
                return
            cursor = resp.pagination_cursor

    def _query_v2(self, peer, content_topics, start, end, pubsub_topic, page_size, forward):
        cursor = None
        while True:
            rpc = v2pb.HistoryRPC(request_id=uuid.uuid4().hex)
            q = rpc.query
            q.pubsub_topic = pubsub_topic or ""
            for ct in content_topics:
                q.content_filters.add(content_topic=ct)
            q.paging_info.page_size = page_size
            q.paging_info.direction = v2pb.PagingInfo.FORWARD if forward else v2pb.PagingInfo.BACKWARD
            if cursor is not None:
                q.paging_info.cursor.CopyFrom(cursor)
            if start is not None:
                q.start_time = start
            if end is not None:
                q.end_time = end
            resp = self._peer_call("store query", peer, self._cancellable, "store query", peer,
                                   self.node.store_query_v2, peer, rpc).response
            if resp.error != v2pb.HistoryResponse.NONE:
                raise StoreQueryError(int(resp.error), v2pb.HistoryResponse.Error.Name(resp.error), peer)
            for pm in resp.messages:
                pm.DiscardUnknownFields()
                m = decode_message(pm.SerializeToString(), require_presence=False)
                ps = pubsub_topic or ""
                yield ReceivedMessage(ps, m, m.hash(ps))
            if not resp.paging_info.HasField("cursor") or not resp.messages:
                return
            cursor = resp.paging_info.cursor


PROFILE_ENV = "ARCHIVIST_WAKU_PROFILE"   # a file name: the node's trio thread runs under cProfile, stats saved there


def _run_profiled(main) -> None:
    """trio.run(main), under cProfile with the thread's own CPU clock when ARCHIVIST_WAKU_PROFILE names a file
    (how the node's per-request costs in docs/BENCHMARKS.md were found; read it with pstats)."""
    import os
    from core.waku import looptrace
    instruments = looptrace.instruments()     # ARCHIVIST_WAKU_LOOPTRACE: where requests wait on the loop
    path = os.environ.get(PROFILE_ENV)
    try:
        if not path:
            trio.run(main, instruments=instruments)
            return
        import cProfile
        import time
        prof = cProfile.Profile(time.thread_time)
        try:
            prof.runcall(trio.run, main, instruments=instruments)
        finally:
            prof.dump_stats(path)
    finally:
        looptrace.dump()
