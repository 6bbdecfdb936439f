"""Status chat IDs, 4-byte topics, Waku content topics and the payload-v1 symmetric key of a chat.

status-go: a community channel's chat ID is communityID + channel UUID; the magnet link travels on
"<communityID>-magnetlinks" (2024) and "<communityID>-memberUpdate" (2026). Topic = keccak256(chatID)[0:4];
content topic "/waku/1/0x<8 hex>/rfc26"; symmetric key = PBKDF2-HMAC-SHA256(chatID, salt="", 65356, 32 bytes).
"""
from __future__ import annotations

import functools
import hashlib
import re

from core.archive.codec import keccak256
from core.waku.topics import STATUS_CLUSTER, STATUS_DEFAULT_SHARD as DEFAULT_SHARD  # noqa: F401 - Status's network
from core.waku.topics import static_shard_topic

PBKDF2_ITERATIONS = 65356          # status-go's number (not 65536)
SYMMETRIC_KEY_BYTES = 32
MAGNETLINKS_SUFFIX = "-magnetlinks"
MEMBER_UPDATE_SUFFIX = "-memberUpdate"

_CONTENT_TOPIC = re.compile(r"^/waku/1/0x([0-9a-fA-F]{8})/rfc26\Z")


def channel_chat_id(community_id: str, channel_uuid: str) -> str:
    return community_id + channel_uuid


def magnetlinks_chat_id(community_id: str) -> str:
    return community_id + MAGNETLINKS_SUFFIX


def member_update_chat_id(community_id: str) -> str:
    return community_id + MEMBER_UPDATE_SUFFIX


def archive_link_chat_ids(community_id: str) -> tuple[str, str]:
    """Both channels on which a control node announces archives (listen on both)."""
    return magnetlinks_chat_id(community_id), member_update_chat_id(community_id)


def status_topic(chat_id: str) -> bytes:
    """The 4-byte Status topic of a chat (what archives store and list in contentTopic)."""
    return keccak256(chat_id.encode("utf-8"))[:4]


def content_topic_of_topic(topic: bytes) -> str:
    if len(topic) != 4:
        raise ValueError(f"a Status topic is 4 bytes, got {len(topic)}")
    return f"/waku/1/0x{topic.hex()}/rfc26"


def content_topic(chat_id: str) -> str:
    return content_topic_of_topic(status_topic(chat_id))


def topic_of_content_topic(content_topic: str) -> bytes:
    """Inverse of content_topic_of_topic. Raises ValueError for anything else (e.g. 23/WAKU2-TOPICS names)."""
    m = _CONTENT_TOPIC.match(content_topic)
    if not m:
        raise ValueError(f"{content_topic!r} is not a Status content topic /waku/1/0x<8 hex>/rfc26")
    return bytes.fromhex(m.group(1))


def pubsub_topic(cluster: int = STATUS_CLUSTER, shard: int = DEFAULT_SHARD) -> str:
    """Status's pubsub topic: core.waku.topics.static_shard_topic (the one formula, with its range check)."""
    return static_shard_topic(cluster, shard)


@functools.lru_cache(maxsize=4096)
def symmetric_key(chat_id: str) -> bytes:
    """Payload-v1 symmetric key of a public chat / community channel (cached: PBKDF2 costs ~30 ms)."""
    return hashlib.pbkdf2_hmac("sha256", chat_id.encode("utf-8"), b"", PBKDF2_ITERATIONS, SYMMETRIC_KEY_BYTES)
