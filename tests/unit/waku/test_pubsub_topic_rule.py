"""One formula for a static-shard pubsub topic `/waku/2/rs/C/S` (core.waku.topics.static_shard_topic, with its
range check), for Status's topic, the node's config and an ENR's relay shards. Two copies wrote the text without
the check: /waku/2/rs/16/5000, which parse_static_shard does not read back."""
import pytest

from core.status.topics import pubsub_topic
from core.waku.enr import RelayShards
from core.waku.topics import InvalidTopic, parse_static_shard, static_shard_topic


def test_every_writer_gives_the_same_topic_and_refuses_the_same_shard():
    assert pubsub_topic() == pubsub_topic(16, 32) == static_shard_topic(16, 32) == "/waku/2/rs/16/32"
    assert RelayShards(16, (32, 64)).topics() == [static_shard_topic(16, 32), static_shard_topic(16, 64)]
    assert parse_static_shard(pubsub_topic(16, 1023)) == (16, 1023)
    for write in (lambda: pubsub_topic(16, 5000), lambda: RelayShards(16, (5000,)).topics()):
        with pytest.raises(InvalidTopic, match="out of range"):
            write()
