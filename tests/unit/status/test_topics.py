import pytest
from Crypto.Hash import SHA256
from Crypto.Protocol.KDF import PBKDF2

from core.status import topics


def test_worked_vector_topic():
    chat_id = "0x02" + "00" * 31 + "aa" + "d1f7c3e2-0000-4000-8000-000000000000"
    assert topics.status_topic(chat_id).hex() == "00eb85a7"
    assert topics.content_topic(chat_id) == "/waku/1/0x00eb85a7/rfc26"
    assert topics.topic_of_content_topic("/waku/1/0x00eb85a7/rfc26") == bytes.fromhex("00eb85a7")


@pytest.mark.parametrize("bad", ["/waku/2/default-content/proto", "/waku/1/0x00eb85/rfc26", "", "/waku/1/0xzzzzzzzz/rfc26"])
def test_bad_content_topics(bad):
    with pytest.raises(ValueError):
        topics.topic_of_content_topic(bad)


def test_special_chat_ids():
    cid = "0x02" + "11" * 32
    assert topics.magnetlinks_chat_id(cid) == cid + "-magnetlinks"
    assert topics.member_update_chat_id(cid) == cid + "-memberUpdate"
    assert topics.archive_link_chat_ids(cid) == (cid + "-magnetlinks", cid + "-memberUpdate")
    assert topics.channel_chat_id(cid, "abc") == cid + "abc"
    assert topics.pubsub_topic() == "/waku/2/rs/16/32"


def test_symmetric_key_matches_independent_pbkdf2_and_is_cached():
    chat = "0x02" + "11" * 32 + "-magnetlinks"
    expected = PBKDF2(chat.encode(), b"", 32, count=65356, hmac_hash_module=SHA256)   # pycryptodome, not hashlib
    assert topics.symmetric_key(chat) == expected
    before = topics.symmetric_key.cache_info().hits
    topics.symmetric_key(chat)
    assert topics.symmetric_key.cache_info().hits == before + 1
    assert topics.symmetric_key(chat + "x") != expected
