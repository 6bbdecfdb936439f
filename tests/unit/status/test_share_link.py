"""Status share links and keys (core.status.share_link), and the config a first run builds from them
(core.node.config: channel_chat_ids, first_run_settings, dump/save round trip through load).

Vectors are status-go's own (protocol/messenger_share_urls_test.go, commit c72f491): the links, the community IDs
and the decoded names, descriptions, member counts, colours and tags are what its tests assert."""
from __future__ import annotations

import importlib.util
import os
import stat

import pytest

from core.node.config import (ConfigError, channel_chat_ids, dump, first_run_settings, load,
                              private_key_from_text, save)
from core.status import share_link as sl

KEY_A = "zQ3shYSHp7GoiXaauJMnDcjwU2yNjdzpXLosAWapPS4CFxc11"
ID_A = "0x02a3d2fdb9ac335917bf9d46b38d7496c00bbfadbaf832e8aa61d13ac2b4452084"
KEY_B = "zQ3shZp9gY1FXfYkcd3CMrFLHriHQfrXvpF9XbZMwJhTcZsq8"
ID_B = "0x02b84843377a24ff498b6c37bd63e2b285c1ee2ccbab82d7a4afa25fff8c5076df"
COMMUNITY_URL = "https://status.app/c#" + KEY_A
COMMUNITY_URL_WITH_DATA = ("https://status.app/c/iyKACkQKB0Rvb2RsZXMSJ0NvbG9yaW5nIHRoZSB3b3JsZCB3aXRoIGpveSDigKIg4bSXIOKAoh"
                           "iYohsiByMxMzFEMkYqAwEhMwM=#" + KEY_A)
NO_TAGS = "https://status.app/c/CxCACh8KBFBJR1MSDHdlIGxvdmUgcGlncxgBIgcjRDM0NEM1Aw==#" + KEY_B
WITH_TAGS = "https://status.app/c/CxKACiMKBFBJR1MSDHdlIGxvdmUgcGlncxgBIgcjRDM0NEM1KgIjHgM=#" + KEY_B
CHANNEL_URL = "https://status.app/cc/003cdcd5-e065-48f9-b166-b1a94ac75a11#" + KEY_A
CHANNEL_URL_WITH_DATA = (
    "https://status.app/cc/G54AAKwObLdpiGjXnckYzRcOSq0QQAS_CURGfqVU42ceGHCObstUIknTTZDOKF3E8y2MSicncpO7fTskXnoACiPKe"
    "ejvjtLTGWNxUhlT7fyQS7Jrr33UVHluxv_PLjV2ePGw5GQ33innzeK34pInIgUGs5RjdQifMVmURalxxQKwiuoY5zwIjixWWRHqjHM=#" + KEY_A)
USER_URL = "https://status.app/u#zQ3shwQPhRuDJSjVGVBnTjCdgXy5i9WQaeVPdGJD6yTarJQSj"

needs_brotli = pytest.mark.skipif(importlib.util.find_spec("brotli") is None, reason="the brotli package is not installed")


# ---------------------------------------------------------------- keys

def test_serialized_key_round_trip():
    assert "0x" + sl.deserialize_public_key(KEY_A).hex() == ID_A
    assert sl.serialize_public_key(bytes.fromhex(ID_A[2:])) == KEY_A
    assert sl.community_share_link(ID_B) == "https://status.app/c#" + KEY_B


@pytest.mark.parametrize("text", [KEY_A, ID_A, ID_A.upper().replace("0X", "0x"), f"  {KEY_A}\n"])
def test_bare_keys(text):
    link = sl.parse(text)
    assert (link.community_id, link.source, link.data_decoded) == (ID_A, "public-key", False)


def test_uncompressed_key_is_compressed(community):
    link = sl.parse("0x" + community.public_key.hex())
    assert link.community_id == community.community_id


def test_b58_leading_zeros():
    for raw in (b"", b"\0", b"\0\0\x01", bytes(range(40))):
        assert sl.b58decode(sl.b58encode(raw)) == raw


# ---------------------------------------------------------------- links: status-go's vectors

def test_community_link_with_key_only():
    link = sl.parse(COMMUNITY_URL)
    assert (link.community_id, link.source, link.name, link.tag_indices) == (ID_A, "community-link", "", ())


@needs_brotli
def test_community_link_with_data():
    link = sl.parse(COMMUNITY_URL_WITH_DATA)
    assert link.community_id == ID_A and link.data_decoded
    assert (link.name, link.description, link.members, link.color, link.tag_indices) == (
        "Doodles", "Coloring the world with joy • ᴗ •", 446744, "#131D2F", (1, 33, 51))


@needs_brotli
@pytest.mark.parametrize("url, tags", [(NO_TAGS, ()), (WITH_TAGS, (0x23, 0x1E))])
def test_community_link_tags(url, tags):
    link = sl.parse(url)
    assert (link.community_id, link.name, link.description, link.members, link.color, link.tag_indices) == (
        ID_B, "PIGS", "we love pigs", 1, "#D344C5", tags)


def test_channel_link_with_uuid():
    link = sl.parse(CHANNEL_URL)
    assert (link.community_id, link.channel_uuid) == (ID_A, "003cdcd5-e065-48f9-b166-b1a94ac75a11")
    assert link.channel_chat_id == ID_A + "003cdcd5-e065-48f9-b166-b1a94ac75a11"


@needs_brotli
def test_channel_link_with_data():
    link = sl.parse(CHANNEL_URL_WITH_DATA)
    assert (link.community_id, link.name, link.channel_name, link.channel_emoji) == (ID_A, "Doodles", "design", "🍿")
    assert link.channel_uuid == "003cdcd5-e065-48f9-b166-b1a94ac75a11"


def test_links_without_scheme_or_with_http_are_read():
    assert sl.parse("status.app/c#" + KEY_A).community_id == ID_A
    assert sl.parse("http://status.app/c#" + KEY_A).community_id == ID_A


# status-go's TestParseWrongUrls, plus what people paste by mistake; each error is one sentence
@pytest.mark.parametrize("text, says", [
    ("https://status.appc/#" + KEY_A, "Not a Status community link"),
    ("https://status.app/cc#" + KEY_A, "Not a Status community link"),
    ("https://status.app/a#" + KEY_A, "Not a Status community link"),
    ("https://status.im/u#" + KEY_A, "Not a Status community link"),
    ("https://status.app/communities", "Not a Status community link"),
    ("https://status.app/u/", "person's profile"),
    (USER_URL, "person's profile"),
    ("https://status.app/c/iyKACkQKB0Rvb2RsZXMS", "no community key after '#'"),
    ("https://status.app/c#", "no community key after '#'"),
    ("https://status.app/c#" + KEY_A[:-1] + "2", "not a Status public key"),
    ("https://status.app/c#" + KEY_A[:20], "not a Status public key"),
    ("https://status.app/c#Q3shYSHp7GoiXaauJMnDcjwU2yNjdzpXLosAWapPS4CFxc11", "starts with z"),
    ("https://status.app/c#z0OIl", "not a base58 character"),
    ("", "Paste the community's share link"),
    ("hello", "Not a community link or key"),
    ("0x02a3d2", "Not a community link or key"),
    ("0x05" + "ab" * 32, "Not a community link or key"),
    ("x" * 9000, "too long"),
])
def test_bad_links(text, says):
    with pytest.raises(sl.ShareLinkError) as e:
        sl.parse(text)
    msg = str(e.value)
    assert says in msg and "\n" not in msg and msg.endswith(".")


@needs_brotli
@pytest.mark.parametrize("data, says", [
    ("!!!!", "not base64url"),
    ("____", "damaged"),
    ("AAAA", "cut short"),
    ("iyKACkQKB0Rvb2RsZXMS", "cut short"),
])
def test_damaged_data_part(data, says):
    for kind in ("c", "cc"):
        with pytest.raises(sl.ShareLinkError, match=says):
            sl.parse(f"https://status.app/{kind}/{data}#{KEY_A}")


@needs_brotli
def test_data_larger_than_status_reads_is_refused():
    import base64

    import brotli
    big = base64.urlsafe_b64encode(brotli.compress(b"\x0a\x80\x40" + b"a" * 8192)).decode()
    with pytest.raises(sl.ShareLinkError, match="larger than 4096"):
        sl.parse(f"https://status.app/c/{big}#{KEY_A}")


# ---------------------------------------------------------------- channels and keys of a first run

def test_channel_names_become_chat_ids():
    out = channel_chat_ids(ID_A, ["general", " dev ", ""])
    assert [n for n, _ in out] == ["general", "dev"]
    for _, chat in out:
        assert chat.startswith(ID_A) and sl.CHANNEL_UUID.match(chat[len(ID_A):])
    assert out[0][1] != out[1][1]


def test_channel_links_chat_ids_and_uuids():
    uuid = "003cdcd5-e065-48f9-b166-b1a94ac75a11"
    assert channel_chat_ids(ID_A, [CHANNEL_URL]) == [("", ID_A + uuid)]
    assert channel_chat_ids(ID_A, [ID_A + uuid], new_allowed=False) == [("", ID_A + uuid)]
    assert channel_chat_ids(ID_A, [uuid], new_allowed=False) == [("", ID_A + uuid)]
    # a chat ID is the community ID's rule then the channel UUID's (no regex of its own): any case, exact length
    assert channel_chat_ids(ID_A, [(ID_A + uuid).upper().replace("0X", "0x")], new_allowed=False) == [("", ID_A + uuid)]
    for bad in (ID_A + uuid[:-1], ID_A[:-1] + uuid, ID_A + uuid.replace("-48f9-", "-68f9-")):
        with pytest.raises(ConfigError, match="cannot add channels"):
            channel_chat_ids(ID_A, [bad], new_allowed=False)


@pytest.mark.parametrize("entries, says", [
    (["general", "General"], "listed twice"),
    ([CHANNEL_URL, "003cdcd5-e065-48f9-b166-b1a94ac75a11"], "listed twice"),
    ([COMMUNITY_URL], "not a channel link"),
    (["https://status.app/cc/003cdcd5-e065-48f9-b166-b1a94ac75a11#" + KEY_B], "another community"),
    ([ID_B + "003cdcd5-e065-48f9-b166-b1a94ac75a11"], "another community"),
    (["a\tb"], "not a channel name"),
])
def test_bad_channels(entries, says):
    with pytest.raises(ConfigError, match=says):
        channel_chat_ids(ID_A, entries)


def test_member_cannot_invent_channels():
    with pytest.raises(ConfigError, match="cannot add channels"):
        channel_chat_ids(ID_A, ["general"], new_allowed=False)


def test_private_key_from_hex_and_key_files(community, tmp_path):
    assert private_key_from_text(community.export_hex() + "\n").community_id == community.community_id
    assert private_key_from_text(community.export_hex()[2:]).community_id == community.community_id
    community.save(tmp_path / "plain.key")
    assert private_key_from_text((tmp_path / "plain.key").read_text()).community_id == community.community_id
    community.save(tmp_path / "locked.key", "secret", scrypt_n=2)
    with pytest.raises(ConfigError, match="passphrase"):
        private_key_from_text((tmp_path / "locked.key").read_text())
    for bad in ("", "zz", "0x1234", "{not json"):
        with pytest.raises(ConfigError):
            private_key_from_text(bad)


# ---------------------------------------------------------------- the config file

def test_owner_config_round_trips(community, tmp_path):
    chans = channel_chat_ids(community.community_id, ["general", "dev \"quoted\" \\ ünï"])
    key = community.save(tmp_path / "data" / "keys" / "c.key")
    s = first_run_settings(role="control", community_id=community.community_id, data_dir=tmp_path / "data",
                           name="My \"community\"", channels=[c for _, c in chans], key_file=key, loopback=True)
    path = save(s, tmp_path / "data" / "archivist.toml", dict((c, n) for n, c in chans))
    back = load(path)
    assert back == s
    text = path.read_text()
    assert 'data_dir = "."' in text and 'key_file = "keys/c.key"' in text and "# general" in text
    assert (back.torrent_listen, back.torrent_local, back.waku_backend) == ("127.0.0.1:0", True, "embedded")
    assert back.communities[0].role == "control" and back.communities[0].key_file == str(key)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ConfigError, match="already exists"):
        save(s, path)
    assert load(path) == s


def test_member_config_round_trips(tmp_path):
    s = first_run_settings(role="member", community_id=ID_A, data_dir=tmp_path / "elsewhere", name="Doodles",
                           channels=[ID_A + "003cdcd5-e065-48f9-b166-b1a94ac75a11"], policy="range",
                           range_start=1_700_000_000, range_end=1_700_600_000, torrent_port=6881, waku_port=60000,
                           waku_peers=["/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2HAm", " "],
                           nwaku_rest_url="http://127.0.0.1:8645")
    path = save(s, tmp_path / "conf" / "archivist.toml")
    back = load(path)
    assert back == s
    c = back.communities[0]
    assert (c.role, c.policy, c.range_start, c.range_end, c.key_file) == ("member", "range", 1_700_000_000,
                                                                          1_700_600_000, None)
    assert (back.torrent_listen, back.torrent_local, back.waku_backend, back.waku_port, back.waku_peers) == (
        "0.0.0.0:6881", False, "nwaku-rest", 60000, ["/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2HAm"])
    assert str(tmp_path / "elsewhere") in path.read_text()      # outside the file's folder: absolute


def test_every_setting_round_trips(tmp_path):
    from core.node.community import CommunityConfig
    from core.node.config import NodeSettings
    s = NodeSettings(data_dir=tmp_path / "d", settle_seconds=0.5, grace_period=0, tick_seconds=0.25,
                     torrent_listen="127.0.0.1:7000", torrent_peers=[("10.0.0.1", 6881)], torrent_local=True,
                     waku_backend="none", waku_host="0.0.0.0", waku_port=60001, waku_peers=["/ip4/1.2.3.4/tcp/1"],
                     waku_rest_url="http://x:1", spark_master="local[2]", spark_build=False)
    s.communities.append(CommunityConfig(community_id=ID_B, name="n", role="member", archive_support=False,
                                         policy="latest", announce_on=("magnetlinks",), trackers=("udp://t:1",),
                                         encrypted=True, backend="codex", codex_api="http://c/api/codex/v1"))
    assert load(save(s, tmp_path / "a.toml")) == s
    assert dump(s, tmp_path) == dump(load(tmp_path / "a.toml"), tmp_path)


@pytest.mark.parametrize("kw, says", [
    (dict(role="owner"), "role must be"),
    (dict(community_id="0x1234"), "community ID"),
    (dict(role="control"), "needs the community key"),
    (dict(role="control", key_file="k"), "at least one channel"),
    (dict(policy="some"), "policy must be"),
    (dict(policy="range", range_start=10, range_end=5), "must end after"),
    (dict(policy="range"), "must end after"),
    (dict(torrent_port=70000), "not 0..65535"),
    (dict(waku_port=-1), "not 0..65535"),
])
def test_first_run_settings_refuses(kw, says, tmp_path):
    args = dict(role="member", community_id=ID_A, data_dir=tmp_path)
    args.update(kw)
    with pytest.raises(ConfigError, match=says):
        first_run_settings(**args)


def test_without_brotli_only_the_key_is_read(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "brotli", None)          # import brotli raises ImportError
    link = sl.parse(COMMUNITY_URL_WITH_DATA)
    assert (link.community_id, link.name, link.data_decoded) == (ID_A, "", False)


def test_waku_edge_limits_round_trip_and_reach_the_node(tmp_path):
    s = first_run_settings(role="member", community_id=ID_A, data_dir=tmp_path / "d", name="x", channels=[])
    s.waku_max_message_size, s.waku_max_future_s, s.waku_read_timeout_s = 150 * 1024, 5.0, 2.5
    path = save(s, tmp_path / "d" / "archivist.toml")
    assert "max_future_s = 5.0" in path.read_text() and load(path) == s
    from core.node.runner import _waku_backend
    backend = _waku_backend(load(path))
    try:
        cfg = backend.config
        assert (cfg.max_message_size, cfg.max_future_s, cfg.read_timeout_s) == (150 * 1024, 5.0, 2.5)
    finally:
        close = getattr(backend, "close", None) or getattr(backend, "stop", None)
        if close:
            close()
    (tmp_path / "bad.toml").write_text('[waku]\nread_timeout_s = 0\n')
    with pytest.raises(ConfigError, match="read_timeout_s"):
        load(tmp_path / "bad.toml")
