import pytest

from core.waku.topics import (InvalidTopic, auto_shard, auto_shard_topic, parse_content_topic, parse_static_shard,
                              static_shard_topic)


def test_autosharding_matches_nwaku_vector():
    # nwaku tests/waku_core/topics/test_sharding.nim: "/toychat/2/huilong/proto" -> /waku/2/rs/1/3 (8 shards)
    assert auto_shard_topic("/toychat/2/huilong/proto", 1, 8) == "/waku/2/rs/1/3"
    assert auto_shard("/0/toychat/2/huilong/proto", 8) == 3
    # only application and version count
    assert auto_shard("/toychat/2/other/rfc26", 8) == 3


def test_content_topic_parsing():
    ct = parse_content_topic("/waku/1/0x1234abcd/rfc26")
    assert (ct.application, ct.version, ct.name, ct.encoding) == ("waku", "1", "0x1234abcd", "rfc26")
    assert str(ct) == "/waku/1/0x1234abcd/rfc26"
    for bad in ["waku/1/a/b", "/a/b/c", "/1/a/1/b/c", "/a//b/c", "/x/a/1/b/c", ""]:
        with pytest.raises(InvalidTopic):
            parse_content_topic(bad)


def test_static_shards():
    assert static_shard_topic(16, 32) == "/waku/2/rs/16/32"
    assert parse_static_shard("/waku/2/rs/16/32") == (16, 32)
    for bad in ["/waku/2/rs/16", "/waku/2/default-waku/proto", "/waku/2/rs/16/99999", "/waku/2/rs/a/1"]:
        with pytest.raises(InvalidTopic):
            parse_static_shard(bad)
