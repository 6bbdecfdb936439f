import argparse

import pytest
from hypothesis import given, settings, strategies as st

from core.torrent.cli import _peer
from core.torrent.selection import parse_when as _when
from core.torrent.fetch import parse_magnet

CID = "0x02" + "ab" * 32


def test_parse_magnet():
    atp, ih, cid = parse_magnet(f"magnet:?xt=urn:btih:{'ab' * 20}&dn={CID}")
    assert ih == "ab" * 20 and cid == CID
    assert parse_magnet(f"magnet:?xt=urn:btih:{'ab' * 20}&dn=x", CID)[2] == CID
    for bad in ("http://x", "magnet:?dn=" + CID, f"magnet:?xt=urn:btih:{'ab' * 20}&dn=../etc",
                f"magnet:?xt=urn:btih:{'ab' * 20}"):
        with pytest.raises(ValueError):
            parse_magnet(bad)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_magnet_never_crashes(text):
    for uri in (text, "magnet:?" + text, f"magnet:?xt=urn:btih:{text}&dn={CID}"):
        try:
            _, ih, cid = parse_magnet(uri)
        except ValueError:
            continue
        assert len(ih) == 40 and cid.startswith("0x")


def test_cli_argument_types():
    assert _peer("127.0.0.1:6881") == ("127.0.0.1", 6881)
    assert _peer("[::1]:80") == ("::1", 80)
    for bad in ("host", "host:0", "host:x", ":80"):
        with pytest.raises(argparse.ArgumentTypeError):
            _peer(bad)
    assert _when("1700000000") == 1700000000
    assert _when("2023-11-14T22:13:20") == 1700000000
    with pytest.raises(argparse.ArgumentTypeError):
        _when("yesterday")
