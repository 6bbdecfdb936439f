"""The magnet-link parser's edges (core/torrent/magnet.py), each pinned by a test that fails when it moves
(written against the survivors of `make mutation`, docs/QUALITY.md). Links are hand-written."""
from __future__ import annotations

import base64

import pytest

from core.torrent.magnet import COMMUNITY_ID, MAX_LINK, MagnetError, parse_magnet, parse_peer

CID = "0x02" + "ab" * 32
IH = "0123456789abcdef" * 2 + "01234567"
OTHER = "fe" * 20


def refused(link, message, **kw):
    with pytest.raises(MagnetError) as ei:
        parse_magnet(link, **kw)
    assert str(ei.value) == message


def test_refusal_sentences_are_exact():
    refused(None, "not a magnet link: not text")
    refused(b"magnet:?xt=urn:btih:" + IH.encode(), "not a magnet link: not text")
    refused("magnet:x", "not a magnet link: it does not start with 'magnet:?'")
    refused("magnet:?dn=" + CID, "magnet link has no BitTorrent v1 infohash (xt=urn:btih:…)")
    refused("magnet:?xt=urn:btih:" + "0" * 40, "magnet link's infohash is all zeros")
    refused(f"magnet:?xt=urn:btih:{IH}&xt=urn:btih:{OTHER}&xt.1=urn:btih:{'cd' * 20}",
            "magnet link names 3 different torrents; one is expected")
    refused("magnet:?xt=urn:btih:" + "z" * 70,
            f"infohash {'z' * 60!r} is not 40 hex digits (or 32 base32 characters)")
    refused(f"magnet:?xt=urn:btih:{IH}&dn=" + "n" * 100,
            f"magnet name {'n' * 80!r} is not a community ID (0x + 66 hex digits)", need_community=True)
    # a lone surrogate (a mis-decoded file or clipboard), counted after the surrounding blanks are stripped
    refused(f"  magnet:?xt=urn:btih:{IH}&dn=\ud800", "not a magnet link: character 64 is not valid text")
    with pytest.raises(MagnetError) as ei:
        parse_magnet("magnet:?xt=urn:btih:" + IH + "&dn=%FF")
    assert str(ei.value).startswith("not a magnet link: its parameters do not decode (")


def test_length_limit_is_inclusive_and_counts_after_stripping():
    base = f"magnet:?xt=urn:btih:{IH}&dn="
    at_limit = base + "n" * (MAX_LINK - len(base))
    assert MAX_LINK == 8192 and parse_magnet(at_limit).infohash == IH
    assert parse_magnet("  \n" + at_limit + " \t").infohash == IH
    refused(at_limit + "n", f"not a magnet link: {MAX_LINK + 1} characters (at most {MAX_LINK})")


def test_scheme_is_case_insensitive_and_duplicates_of_one_hash_are_one_torrent():
    m = parse_magnet(f"MAGNET:?XT=URN:BTIH:{IH}&xt.2=urn:btih:{IH.upper()}&Dn={CID}")
    assert (m.infohash, m.name, m.community_id) == (IH, CID, CID)


def test_only_xt_and_numbered_xt_keys_carry_hashes():
    # xt.abc is not a numbered xt; xtra is not xt; a non-btih urn is ignored
    m = parse_magnet(f"magnet:?xt.abc=urn:btih:{OTHER}&xtra=urn:btih:{OTHER}&xt=urn:sha1:{OTHER}"
                     f"&xt.1=urn:btih:{IH}")
    assert m.infohash == IH
    refused(f"magnet:?xt.x=urn:btih:{IH}", "magnet link has no BitTorrent v1 infohash (xt=urn:btih:…)")
    refused(f"magnet:?xt=urn:btie:{IH}&xt=btih:{IH}", "magnet link has no BitTorrent v1 infohash (xt=urn:btih:…)")


def test_base32_hash_of_either_case():
    b32 = base64.b32encode(bytes.fromhex(IH)).decode()
    assert parse_magnet(f"magnet:?xt=urn:btih:{b32.lower()}").infohash == IH
    refused(f"magnet:?xt=urn:btih:{b32[:-1]}1", f"infohash {b32[:-1] + '1'!r} is not 40 hex digits "
            "(or 32 base32 characters)")


def test_first_name_wins_empty_trackers_dropped_duplicates_merged_in_order():
    m = parse_magnet(f"magnet:?xt=urn:btih:{IH}&dn=first&dn=second&tr=&tr=udp%3A%2F%2Fb&tr=udp%3A%2F%2Fa"
                     "&tr=udp%3A%2F%2Fb&x.pe=h:1&x.pe=h:1&x.pe=g:2&x.pe=:3&X.PE=k:4")
    assert m.name == "first"
    assert m.trackers == ("udp://b", "udp://a")
    assert m.peers == (("h", 1), ("g", 2), ("k", 4))
    m = parse_magnet(f"magnet:?xt=urn:btih:{IH}&dn=&dn=later")
    assert m.name == "later"                     # an empty dn is no name


def test_community_comes_from_the_argument_before_dn_and_is_lower_cased():
    m = parse_magnet(f"magnet:?xt=urn:btih:{IH}&dn=photos", CID.upper().replace("0X", "0x"))
    assert (m.name, m.community_id) == ("photos", CID)
    m = parse_magnet(f"magnet:?xt=urn:btih:{IH}&dn={CID.upper().replace('0X', '0x')}")
    assert m.community_id == CID
    m = parse_magnet(f"magnet:?xt=urn:btih:{IH}&dn={CID}", "0x03" + "cd" * 32)
    assert m.community_id == "0x03" + "cd" * 32
    assert parse_magnet(f"magnet:?xt=urn:btih:{IH}&dn={CID}0").community_id is None
    assert COMMUNITY_ID.match(CID) and not COMMUNITY_ID.match("x" + CID)


def test_peer_port_range_and_brackets():
    assert parse_peer("h:1") == ("h", 1) and parse_peer("h:65535") == ("h", 65535)
    assert parse_peer("h:65536") is None and parse_peer("h:0") is None and parse_peer("h:-1") is None
    assert parse_peer(":80") is None and parse_peer("h:") is None and parse_peer("h") is None
    assert parse_peer("[2001:db8::1]:443") == ("2001:db8::1", 443)
    assert parse_peer("a:b:7") == ("a:b", 7) and parse_peer("XdX:9") == ("XdX", 9)


def test_a_community_id_with_a_trailing_newline_is_not_a_community_id():
    """`$` matches before a final newline; the patterns end with \\Z (found by mutation testing)."""
    cid = "0x02" + "ab" * 32
    assert COMMUNITY_ID.match(cid) and not COMMUNITY_ID.match(cid + "\n")
    link = f"magnet:?xt=urn:btih:{'cd' * 20}&dn={cid}%0A"
    with pytest.raises(MagnetError):
        parse_magnet(link, need_community=True)
    assert parse_magnet(link).community_id is None


def test_parse_listen_takes_port_zero_and_the_peer_rule_otherwise():
    from core.torrent.magnet import parse_listen
    assert parse_listen("0.0.0.0:0") == ("0.0.0.0", 0) and parse_peer("0.0.0.0:0") is None
    assert parse_listen("[::]:65535") == ("::", 65535)
    assert [parse_listen(t) for t in ("h:65536", "h", ":1", "h:-1", "h:\u00b2")] == [None] * 5
