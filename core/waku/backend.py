"""The interface the engine uses, implemented by EmbeddedWakuBackend (default) and NwakuRestBackend."""
from __future__ import annotations

from typing import Callable, Iterator, Protocol, Sequence

from core.waku.message import WakuMessage
from core.waku.relay import ReceivedMessage

MessageCallback = Callable[[ReceivedMessage], None]


class Subscription:
    """Returned by subscribe(); call cancel() to stop deliveries."""

    def __init__(self, pubsub_topic: str, content_topics: Sequence[str], callback: MessageCallback, owner):
        self.pubsub_topic = pubsub_topic
        self.content_topics = frozenset(content_topics)
        self.callback = callback
        self._owner = owner

    def matches(self, rm: ReceivedMessage) -> bool:
        return rm.pubsub_topic == self.pubsub_topic and (
            not self.content_topics or rm.message.content_topic in self.content_topics)

    def cancel(self) -> None:
        self._owner._unsubscribe(self)


class WakuBackend(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    @property
    def listen_addrs(self) -> list[str]: ...
    def add_peer(self, multiaddr: str) -> str: ...
    def subscribe(self, pubsub_topic: str, content_topics: Sequence[str],
                  callback: MessageCallback) -> Subscription: ...
    def publish(self, pubsub_topic: str, message: WakuMessage) -> bytes: ...
    def query_store(self, peer: str | None, content_topics: Sequence[str], start: int | None = None,
                    end: int | None = None, *, pubsub_topic: str | None = None, page_size: int = 100,
                    forward: bool = True) -> Iterator[ReceivedMessage]: ...
