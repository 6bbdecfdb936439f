"""Content topics (23/WAKU2-TOPICS) and relay sharding (51/WAKU2-RELAY-SHARDING): static and auto.

Static shard pubsub topic: /waku/2/rs/<cluster>/<shard>. Autosharding (generation 0):
shard = uint64_be(sha256(application || version)[24:32]) % num_shards.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

STATUS_CLUSTER = 16
STATUS_DEFAULT_SHARD = 32
DEFAULT_PUBSUB_TOPIC = "/waku/2/default-waku/proto"
MAX_SHARD = 1023


class InvalidTopic(ValueError):
    pass


@dataclass(frozen=True)
class ContentTopic:
    application: str
    version: str
    name: str
    encoding: str
    generation: int = 0

    def __str__(self) -> str:
        gen = f"/{self.generation}" if self.generation else ""
        return f"{gen}/{self.application}/{self.version}/{self.name}/{self.encoding}"


def parse_content_topic(topic: str) -> ContentTopic:
    """Parse `/app/version/name/encoding` or `/generation/app/version/name/encoding`."""
    if not topic.startswith("/"):
        raise InvalidTopic(f"content topic must start with '/': {topic!r}")
    parts = topic[1:].split("/")
    if len(parts) == 5:
        gen_s, *parts = parts
        if not gen_s.isdigit():
            raise InvalidTopic(f"generation must be a number: {topic!r}")
        gen = int(gen_s)
        if gen != 0:
            raise InvalidTopic(f"generation {gen} is not supported: {topic!r}")
    elif len(parts) == 4:
        gen = 0
    else:
        raise InvalidTopic(f"content topic needs 4 or 5 parts: {topic!r}")
    if any(p == "" for p in parts):
        raise InvalidTopic(f"empty part in content topic: {topic!r}")
    return ContentTopic(*parts, generation=gen)


_STATIC_RE = re.compile(r"^/waku/2/rs/(\d{1,5})/(\d{1,4})\Z")


def static_shard_topic(cluster: int, shard: int) -> str:
    if not 0 <= cluster <= 0xFFFF or not 0 <= shard <= MAX_SHARD:
        raise InvalidTopic(f"cluster {cluster} / shard {shard} out of range")
    return f"/waku/2/rs/{cluster}/{shard}"


def parse_static_shard(pubsub_topic: str) -> tuple[int, int]:
    """(cluster, shard) of a `/waku/2/rs/<cluster>/<shard>` topic; InvalidTopic otherwise."""
    m = _STATIC_RE.match(pubsub_topic)
    if not m:
        raise InvalidTopic(f"not a static shard topic: {pubsub_topic!r}")
    cluster, shard = int(m.group(1)), int(m.group(2))
    static_shard_topic(cluster, shard)  # range check
    return cluster, shard


def auto_shard(content_topic: str | ContentTopic, num_shards: int) -> int:
    """Autosharding shard index of a content topic in a network of num_shards shards."""
    if num_shards <= 0:
        raise ValueError("num_shards must be positive")
    ct = content_topic if isinstance(content_topic, ContentTopic) else parse_content_topic(content_topic)
    digest = hashlib.sha256(ct.application.encode() + ct.version.encode()).digest()
    return int.from_bytes(digest[24:32], "big") % num_shards


def auto_shard_topic(content_topic: str, cluster: int, num_shards: int) -> str:
    return static_shard_topic(cluster, auto_shard(content_topic, num_shards))
