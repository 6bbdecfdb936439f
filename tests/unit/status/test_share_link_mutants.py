"""Share links and keys (core/status/share_link.py): every sentence a member can see, and each edge of the
decoder, pinned by a test that fails when it moves (written against the survivors of `make mutation`,
docs/QUALITY.md). Data parts are built here from the .proto field numbers, with the brotli package."""
from __future__ import annotations

import base64

import brotli
import pytest
from coincurve import PrivateKey

from core.pb import status_url_data_pb2 as pb
from core.status import share_link as sl

KEY_A = "zQ3shYSHp7GoiXaauJMnDcjwU2yNjdzpXLosAWapPS4CFxc11"          # status-go's test vector
ID_A = "0x02a3d2fdb9ac335917bf9d46b38d7496c00bbfadbaf832e8aa61d13ac2b4452084"
UUID = "003cdcd5-e065-48f9-b166-b1a94ac75a11"


def b64url(raw: bytes, pad: bool = True) -> str:
    s = base64.urlsafe_b64encode(raw).decode()
    return s if pad else s.rstrip("=")


def data_part(content: bytes, shard: tuple[int, int] | None = None, pad: bool = True) -> str:
    u = pb.URLData(content=content)
    if shard:
        u.shard.cluster, u.shard.index = shard
    return b64url(brotli.compress(u.SerializeToString()), pad)


def community_bytes(name="N", members=3) -> bytes:
    return pb.Community(display_name=name, description="d", members_count=members, color="#123456",
                        tag_indices=[2]).SerializeToString()


def refused(text, message):
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.parse(text)
    assert str(ei.value) == message


def key_of(raw: bytes) -> str:
    return "z" + sl.b58encode(raw)


# ---------------------------------------------------------------- keys

def test_key_sentences():
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.deserialize_public_key("Q3sh")
    assert str(ei.value) == "a Status public key starts with z (base58btc), like zQ3sh…"
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.b58decode("0OIl")
    assert str(ei.value) == "the key holds something that is not a base58 character"
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.deserialize_public_key(key_of(b""))
    assert str(ei.value) == "the key is too short"
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.deserialize_public_key(key_of(bytes([0xE8, 0x01]) + bytes(33)))
    assert str(ei.value) == "the key is not a secp256k1 key (multicodec 0xe8)"
    with pytest.raises(sl.ShareLinkError) as ei:
        sl._on_curve(b"\x02" + b"\xff" * 32)
    assert str(ei.value) == "the key is not a point on secp256k1"
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.community_id_from_key("hello")
    assert str(ei.value) == "a community key is 0x + 66 hex digits or the zQ3… form"


def test_key_length_and_prefix_are_both_checked():
    raw = sl.deserialize_public_key(KEY_A)
    for body in (raw + b"\0", raw[:-1], b"\x04" + raw[1:]):
        with pytest.raises(sl.ShareLinkError) as ei:
            sl.deserialize_public_key(key_of(bytes([0xE7, 0x01]) + body))
        assert str(ei.value) == f"the key holds {len(body)} bytes, not a 33-byte compressed public key"
    odd = PrivateKey(bytes([7]) * 32).public_key.format(compressed=True)
    if odd[0] != 3:
        odd = PrivateKey(bytes([8]) * 32).public_key.format(compressed=True)
    assert odd[0] == 3 and sl.deserialize_public_key(key_of(bytes([0xE7, 0x01]) + odd)) == odd


def test_hex_keys_need_hex_and_the_right_length():
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.community_id_from_key("0x" + "g" * 66)
    assert str(ei.value) == "a community key is 0x + 66 hex digits or the zQ3… form"
    with pytest.raises(sl.ShareLinkError):
        sl.community_id_from_key(ID_A + "00")


# ---------------------------------------------------------------- data parts

def test_data_part_without_base64_padding_is_read():
    data = data_part(community_bytes(), pad=False)
    assert len(data) % 4                                   # the padding really is missing
    link = sl.parse(f"https://status.app/c/{data}#{KEY_A}")
    assert (link.name, link.members, link.data_decoded, link.source) == ("N", 3, True, "community-link")


def _url_data_of(size: int) -> str:
    raw = pb.URLData(content=b"x" * (size - 3)).SerializeToString()      # tag + 2-byte length + content
    assert len(raw) == size
    return b64url(brotli.compress(raw))


def test_data_of_exactly_4096_bytes_is_read_one_more_is_refused():
    assert len(sl.decode_data(_url_data_of(4096))) == 4096
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.decode_data(_url_data_of(4097))
    assert str(ei.value) == "the link's data is larger than 4096 bytes"


def test_a_brotli_bomb_is_refused_without_inflating_it():
    """16 MiB of zeros in 3 KB: decoding stops at the first output block instead of allocating all of it."""
    import tracemalloc
    bomb = b64url(brotli.compress(b"\0" * (16 << 20), quality=1))
    tracemalloc.start()
    try:
        with pytest.raises(sl.ShareLinkError) as ei:
            sl.decode_data(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(ei.value) == "the link's data is larger than 4096 bytes"
    assert peak < 1 << 20, f"decoding the bomb allocated {peak} bytes"


def test_data_part_sentences():
    for data, message in (("!!!!", "the link's data part is not base64url"),
                          ("____", "the link's data part is damaged (not Brotli)"),
                          ("AAAA", "the link's data part is cut short")):
        with pytest.raises(sl.ShareLinkError) as ei:
            sl.decode_data(data)
        assert str(ei.value) == message
    with pytest.raises(sl.ShareLinkError) as ei:
        sl._parse(pb.URLData(), b"\xff\xff")
    assert str(ei.value) == "the link's data is damaged (it does not decode)"


def test_shard_is_read_from_community_and_channel_links():
    link = sl.parse(f"https://status.app/c/{data_part(community_bytes(), shard=(16, 32))}#{KEY_A}")
    assert (link.shard, link.data_decoded) == ((16, 32), True)
    assert sl.parse(f"https://status.app/c/{data_part(community_bytes())}#{KEY_A}").shard is None
    ch = pb.Channel(display_name="dev", emoji="x", uuid=UUID)
    ch.community.CopyFrom(pb.Community(display_name="N"))
    link = sl.parse(f"https://status.app/cc/{data_part(ch.SerializeToString(), shard=(16, 1))}#{KEY_A}")
    assert (link.source, link.shard, link.data_decoded, link.channel_uuid, link.channel_name, link.name) == (
        "channel-link", (16, 1), True, UUID, "dev", "N")
    ch.uuid = ""
    link = sl.parse(f"https://status.app/cc/{data_part(ch.SerializeToString())}#{KEY_A}")
    assert (link.channel_uuid, link.shard, link.channel_chat_id) == (None, None, None)


def test_channel_data_with_a_malformed_uuid_is_refused():
    ch = pb.Channel(display_name="dev", uuid="not-a-uuid")
    refused(f"https://status.app/cc/{data_part(ch.SerializeToString())}#{KEY_A}",
            "The channel link's UUID is malformed.")


def test_without_brotli_the_source_is_still_told(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "brotli", None)
    link = sl.parse(f"https://status.app/cc/{data_part(b'')}#{KEY_A}")
    assert (link.community_id, link.source, link.data_decoded) == (ID_A, "channel-link", False)


# ---------------------------------------------------------------- whole links: the sentences on screen

def test_link_sentences_are_exact():
    refused("", "Paste the community's share link or its public key.")
    refused("   ", "Paste the community's share link or its public key.")
    refused("x" * 8193, "That is too long for a Status share link.")
    refused("HTTPS://example.org/c", "Not a Status community link (those start with https://status.app/c/).")
    refused("https://status.app/x#" + KEY_A, "Not a Status community link (those start with https://status.app/c/).")
    refused("hello", "Not a community link or key: a community key is 0x + 66 hex digits or the zQ3… form.")
    refused("https://status.app/u#" + KEY_A, "This links to a person's profile, not to a community.")
    refused("https://status.app/c/abc", "The link has no community key after '#': copy the whole link.")
    refused("https://status.app/c#Q3", "The key after '#' is not a Status public key: a Status public key starts "
            "with z (base58btc), like zQ3sh….")
    refused(f"https://status.app/cc/#{KEY_A}", "The channel link has nothing between /cc/ and '#'.")
    refused(f"https://status.app/c/!!!!#{KEY_A}", "The link's data part is not base64url.")
    refused(f"https://status.app/cc/AAAA#{KEY_A}", "The link's data part is cut short.")


def test_the_length_limit_is_inclusive():
    prefix, suffix = "https://status.app/c/", "#" + KEY_A
    data = "A" * (8192 - len(prefix) - len(suffix))
    with pytest.raises(sl.ShareLinkError) as ei:
        sl.parse(prefix + data + suffix)                  # 8192 characters: read (and refused for its data)
    assert str(ei.value) != "That is too long for a Status share link."


def test_channel_uuid_link_and_the_first_hash_splits_data_from_key():
    link = sl.parse(f"https://status.app/cc/{UUID}#{KEY_A}")
    assert (link.source, link.channel_uuid, link.data_decoded) == ("channel-link", UUID, False)
    # everything after the first '#' is the key: a second '#' makes the key unreadable
    refused(f"https://status.app/c#{KEY_A}#{KEY_A}", "The key after '#' is not a Status public key: the key holds "
            "something that is not a base58 character.")
    # a data part that starts with the characters around the slash is not trimmed
    refused(f"https://status.app/c/XX#{KEY_A}", "The link's data part is cut short.")
