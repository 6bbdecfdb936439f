"""How nodes reach Waku. `WakuTransport` adapts the embedded or REST Waku backend (core/waku); `LocalHub` is
an in-process hub for several nodes in one process that have no Waku network (offline demo, unit tests of the
node logic). Both keep messages for store queries, so late joiners catch up."""
from __future__ import annotations

import threading
from typing import Callable, Iterable, Protocol, Sequence

from core.node.control import ReceivedWakuMessage

Callback = Callable[[ReceivedWakuMessage], None]


class Transport(Protocol):
    def publish(self, content_topic: str, payload: bytes, timestamp_ns: int) -> None: ...
    def subscribe(self, content_topics: Sequence[str], callback: Callback) -> Callable[[], None]: ...
    def query(self, content_topics: Sequence[str], start: int, end: int,
              errors: list | None = None) -> Iterable[ReceivedWakuMessage]:
        """Stored messages in [start, end) (seconds); a store that fails appends (peer, reason) to `errors`."""


class LocalHub:
    """Relay + store in one process: every subscriber of a content topic gets each message once."""

    def __init__(self, pubsub_topic: str | None = None) -> None:
        from core.status.topics import pubsub_topic as default_pubsub
        self.pubsub_topic = pubsub_topic or default_pubsub()
        self._subs: list[tuple[frozenset[str], Callback]] = []
        self._store: list[ReceivedWakuMessage] = []
        self._lock = threading.Lock()

    def publish(self, content_topic: str, payload: bytes, timestamp_ns: int) -> None:
        from core.waku.message import WakuMessage, message_hash
        h = message_hash(self.pubsub_topic, WakuMessage(payload=payload, content_topic=content_topic,
                                                        timestamp=timestamp_ns))
        m = ReceivedWakuMessage(content_topic, payload, timestamp_ns, h)
        with self._lock:
            self._store.append(m)
            subs = [cb for topics, cb in self._subs if content_topic in topics]
        for cb in subs:
            cb(m)

    def subscribe(self, content_topics: Sequence[str], callback: Callback) -> Callable[[], None]:
        entry = (frozenset(content_topics), callback)
        with self._lock:
            self._subs.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._subs:
                    self._subs.remove(entry)
        return unsubscribe

    def query(self, content_topics: Sequence[str], start: int, end: int,
              errors: list | None = None) -> list[ReceivedWakuMessage]:
        topics = set(content_topics)
        with self._lock:
            return [m for m in self._store
                    if m.content_topic in topics and start <= m.timestamp_ns // 10 ** 9 < end]


class WakuTransport:
    """Adapts a core.waku backend (embedded node or nwaku REST) to what the nodes need."""

    def __init__(self, backend, pubsub_topic: str | None = None, store_peers: Sequence[str] = ()):
        from core.status.topics import pubsub_topic as default_pubsub
        self.backend = backend
        self.pubsub_topic = pubsub_topic or default_pubsub()
        self.store_peers = list(store_peers)

    def publish(self, content_topic: str, payload: bytes, timestamp_ns: int) -> None:
        from core.waku.message import WakuMessage
        self.backend.publish(self.pubsub_topic, WakuMessage(payload=payload, content_topic=content_topic, version=1,
                                                            timestamp=timestamp_ns))

    def subscribe(self, content_topics: Sequence[str], callback: Callback) -> Callable[[], None]:
        sub = self.backend.subscribe(self.pubsub_topic, list(content_topics),
                                     lambda rm: callback(self._received(rm)))
        return sub.cancel

    @staticmethod
    def _received(rm) -> ReceivedWakuMessage:
        m = rm.message
        return ReceivedWakuMessage(m.content_topic, m.payload, m.timestamp or 0, rm.hash)

    def cancel_queries(self) -> None:
        """End the store queries under way at once and refuse new ones (the engine is stopping); a backend that
        cannot (nwaku REST: its calls have their own short timeout) lets them run out."""
        cancel = getattr(self.backend, "cancel_queries", None)
        if cancel is not None:
            cancel()

    def query(self, content_topics: Sequence[str], start: int, end: int,
              errors: list | None = None) -> Iterable[ReceivedWakuMessage]:
        """Ask each known store peer (then our own store); a peer that fails is skipped, not fatal (and listed in
        `errors` as (peer, reason))."""
        import logging
        from core.waku.errors import WakuError
        seen: set[bytes] = set()
        for peer in [*self.store_peers, None]:
            try:
                for rm in self.backend.query_store(peer, list(content_topics), start * 10 ** 9, end * 10 ** 9,
                                                   pubsub_topic=self.pubsub_topic):
                    if rm.hash not in seen:
                        seen.add(rm.hash)
                        yield self._received(rm)
            except WakuError as e:  # a store node that times out, refuses or goes away: say so, use the others
                level = logging.INFO if getattr(e, "kind", None) == "cancelled" else logging.WARNING   # a stop
                logging.getLogger(__name__).log(level, "store query to %s failed: %s", peer or "own store", e)
                if errors is not None:
                    errors.append((peer or "own store", str(e)))
