"""Deterministic community chat traffic: real signed, payload-v1-encrypted Status messages.

Same seed and arguments -> the same messages, byte for byte (all randomness, padding and nonces included, comes
from one seeded generator). Serves the demo, tests and benchmarks; core/synth.py is the faster, opaque variant.
"""
from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from coincurve import PrivateKey

from core.archive.codec import ArchiveMessage, keccak256
from core.status import payload_v1, topics
from core.status.application_metadata import CHAT_MESSAGE, installation_id_for, wrap_application, wrap_public
from core.status.chat_message import encode_chat_message
from core.status.identity import CommunityIdentity
from core.storage import waku_messages
from core.waku.message import WakuMessage, message_hash

DEFAULT_START = 1_700_000_000
_WORDS = ("the archive torrent seed peer message community channel history node waku status key link index "
          "hello thanks anyone know how sync works today tomorrow great idea agreed merged release build "
          "test bug fix shipped meeting notes gm gn lol nice wen soon docs question answer please check").split()


def waku_message_hash(pubsub_topic: str, payload: bytes, content_topic: str, meta: bytes, timestamp_ns: int) -> bytes:
    """14/WAKU2-MESSAGE deterministic hash of a message's parts: core.waku.message.message_hash, the one formula
    (a copy here had kept core.status off core.waku, which it sits above)."""
    return message_hash(pubsub_topic, WakuMessage(payload, content_topic, meta=meta or None, timestamp=timestamp_ns))


@dataclass(frozen=True, slots=True)
class Channel:
    name: str
    chat_id: str

    @property
    def topic(self) -> bytes:
        return topics.status_topic(self.chat_id)

    @property
    def content_topic(self) -> str:
        return topics.content_topic(self.chat_id)


@dataclass(frozen=True, slots=True)
class TrafficMessage:
    """One Waku message as it travels (version 1 payload) plus what was put inside, for checking."""

    pubsub_topic: str
    content_topic: str
    chat_id: str
    timestamp_ns: int
    envelope: bytes               # WakuMessage.payload (payload-v1, encrypted)
    author: bytes                 # 65-byte uncompressed public key
    text: str
    clock: int

    @property
    def hash(self) -> bytes:
        return waku_message_hash(self.pubsub_topic, self.envelope, self.content_topic, b"", self.timestamp_ns)


class TrafficGenerator:
    """Chat on a community's channels by a fixed set of authors."""

    def __init__(self, seed: int = 1, *, channels: int = 3, authors: int = 20,
                 community: CommunityIdentity | None = None, pubsub_topic: str | None = None):
        self.seed = seed
        seed_bytes = seed.to_bytes(8, "big", signed=True)
        self.community = community or CommunityIdentity(PrivateKey(keccak256(b"archivist-traffic-community"
                                                                             + seed_bytes)))
        self.pubsub_topic = pubsub_topic or topics.pubsub_topic()
        rng = random.Random(seed)
        names = ["general", "dev", "random", "support", "announcements", "trading", "design", "offtopic"]
        self.channels = [Channel(names[i % len(names)] + ("" if i < len(names) else str(i)),
                                 topics.channel_chat_id(self.community.community_id,
                                                        str(uuid.UUID(int=rng.getrandbits(128), version=4))))
                         for i in range(max(1, channels))]
        self.authors = [PrivateKey(keccak256(b"archivist-traffic-author" + seed_bytes + i.to_bytes(4, "big")))
                        for i in range(max(1, authors))]
        self._installations = [installation_id_for(a) for a in self.authors]

    @property
    def community_id(self) -> str:
        return self.community.community_id

    @property
    def topics(self) -> list[bytes]:
        return [c.topic for c in self.channels]

    def messages(self, count: int, *, start: int = DEFAULT_START, span: int = 7 * 24 * 3600) -> Iterator[TrafficMessage]:
        """`count` messages with timestamps spread over [start, start + span) seconds, in time order."""
        rng = random.Random(self.seed * 1_000_003 + count)
        clock = 0
        for i in range(count):
            ts_ns = (start * 10 ** 9 + (i * span * 10 ** 9) // max(1, count)
                     + rng.randrange(max(1, span * 10 ** 9 // max(1, count))))
            ch = self.channels[0] if rng.random() < 0.4 else self.channels[rng.randrange(len(self.channels))]
            a = rng.randrange(len(self.authors))
            author = self.authors[a]
            text = " ".join(rng.choice(_WORDS) for _ in range(max(1, int(rng.lognormvariate(2.0, 0.8)))))
            ts_ms = ts_ns // 10 ** 6
            clock = max(clock + 1, ts_ms)
            chat = encode_chat_message(text, ch.chat_id, clock, ts_ms, display_name=f"user{a}")
            pm = wrap_public(wrap_application(chat, CHAT_MESSAGE, author), self._installations[a])
            env = payload_v1.encrypt(pm, topics.symmetric_key(ch.chat_id), signer=author, random_bytes=rng.randbytes)
            yield TrafficMessage(self.pubsub_topic, ch.content_topic, ch.chat_id, ts_ns, env,
                                 author.public_key.format(compressed=False), text, clock)


def to_archive_message(msg: TrafficMessage) -> ArchiveMessage:
    """What status-go's control node stores for a received message (and later archives): sig = recovered
    signer key, timestamp in seconds, 4-byte topic, decrypted payload, padding, 32-byte Waku hash."""
    topic = topics.topic_of_content_topic(msg.content_topic)
    decoded = payload_v1.decrypt(msg.envelope, topics.symmetric_key(msg.chat_id))
    return ArchiveMessage(sig=decoded.public_key or b"", timestamp=msg.timestamp_ns // 10 ** 9, topic=topic,
                          payload=decoded.data, padding=decoded.padding, hash=msg.hash)


def to_archive_messages(msgs: Iterable[TrafficMessage]) -> Iterator[ArchiveMessage]:
    return (to_archive_message(m) for m in msgs)


@dataclass(frozen=True)
class TrafficStore:
    path: str
    community_id: str
    chat_ids: list[str]
    topics: list[str]
    messages: int

    def to_json(self) -> dict:
        return self.__dict__.copy()


def write_store(path: Path | str, count: int, *, seed: int = 1, channels: int = 3, authors: int = 20,
                start: int = DEFAULT_START, span: int = 7 * 24 * 3600,
                generator: TrafficGenerator | None = None) -> TrafficStore:
    """Write `count` generated messages into a status-go `waku_messages` SQLite file (appends if it exists)."""
    gen = generator or TrafficGenerator(seed, channels=channels, authors=authors)
    con = waku_messages.connect(path)
    try:
        batch: list[ArchiveMessage] = []
        for m in gen.messages(count, start=start, span=span):
            batch.append(to_archive_message(m))
            if len(batch) >= 5000:
                waku_messages.insert_messages(con, batch)
                batch.clear()
        waku_messages.insert_messages(con, batch)
        con.commit()
    finally:
        con.close()
    return TrafficStore(str(path), gen.community_id, [c.chat_id for c in gen.channels],
                        ["0x" + t.hex() for t in gen.topics], count)


def channel_topics(chat_ids: Sequence[str]) -> list[bytes]:
    return [topics.status_topic(c) for c in chat_ids]
