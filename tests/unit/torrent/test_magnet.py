"""The one magnet-link parser (core/torrent/magnet.py): what both the member's download and the Inspector read."""
from __future__ import annotations

import base64
import re

import pytest

from core.torrent.fetch import parse_magnet as fetch_params
from core.torrent.magnet import MagnetError, format_peer, parse_magnet, parse_peer

CID = "0x02" + "ab" * 32
IH = "0123456789abcdef" * 2 + "01234567"


def test_reads_every_field():
    m = parse_magnet(f"magnet:?xt=urn:btih:{IH.upper()}&dn={CID}&tr=udp%3A%2F%2Ft%3A1%2Fa&tr=udp%3A%2F%2Ft%3A1%2Fa"
                     "&x.pe=127.0.0.1:6881&x.pe=[::1]:80&x.pe=bad")
    assert (m.infohash, m.name, m.community_id) == (IH, CID, CID)
    assert m.trackers == ("udp://t:1/a",) and m.peers == (("127.0.0.1", 6881), ("::1", 80))


def test_base32_infohash_and_a_link_without_community():
    b32 = base64.b32encode(bytes.fromhex(IH)).decode()
    m = parse_magnet(f"magnet:?xt=urn:btih:{b32}&dn=holiday-photos")
    assert m.infohash == IH and m.community_id is None and m.name == "holiday-photos"
    with pytest.raises(MagnetError, match="magnet name 'holiday-photos' is not a community ID"):
        parse_magnet(f"magnet:?xt=urn:btih:{b32}&dn=holiday-photos", need_community=True)
    assert parse_magnet(f"magnet:?xt=urn:btih:{IH}", CID, need_community=True).community_id == CID


@pytest.mark.parametrize("link, says", [
    ("http://example.org", "does not start with 'magnet:?'"),
    ("magnet:?dn=" + CID, "no BitTorrent v1 infohash"),
    ("magnet:?xt=urn:btih:" + "0" * 39, "is not 40 hex digits"),
    ("magnet:?xt=urn:btih:" + "0" * 40, "all zeros"),
    (f"magnet:?xt=urn:btih:{IH}&xt=urn:btih:{'ab' * 20}", "names 2 different torrents"),
    ("magnet:?xt=urn:btih:" + IH + "&dn=%FF", "do not decode"),
    ("magnet:?" + "x" * 9000, "at most 8192"),
])
def test_refusals_say_why(link, says):
    with pytest.raises(MagnetError, match=re.escape(says)):
        parse_magnet(link)


def test_the_download_uses_the_same_parser():
    atp, ih, cid = fetch_params(f"magnet:?xt=urn:btih:{IH}&dn={CID}&tr=udp%3A%2F%2Ft%3A1&x.pe=10.0.0.1:5"
                                "&x.pe=example.org:6")
    assert (ih, cid, atp.name, str(atp.info_hashes.v1)) == (IH, CID, CID, IH)
    assert atp.trackers == ["udp://t:1"] and atp.peers == [("10.0.0.1", 5)]    # host names are not endpoints
    with pytest.raises(MagnetError, match="is not 40 hex digits"):
        fetch_params("magnet:?xt=urn:btih:xyz&dn=" + CID)


def test_peer_addresses():
    assert parse_peer("[::1]:6881") == ("::1", 6881) and parse_peer("h:\u00b2") is None and parse_peer("h:0") is None


@pytest.mark.parametrize("host,port,text", [("h", 1, "h:1"), ("10.0.0.2", 6881, "10.0.0.2:6881"),
                                            ("::1", 6881, "[::1]:6881"), ("fe80::2", 65535, "[fe80::2]:65535")])
def test_format_peer_writes_what_parse_peer_reads(host, port, text):
    assert format_peer(host, port) == text and parse_peer(text) == (host, port)
