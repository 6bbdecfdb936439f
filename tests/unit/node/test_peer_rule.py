"""One rule for a BitTorrent peer address (core.torrent.magnet.parse_peer), in every place a person types one: the
node's config file, the first-run screen (first_run_settings), the node settings form (config.peer) and `archivist
fetch --peer`. Before, four copies disagreed: the config kept "[::1]" with its brackets (libtorrent cannot connect to
that), took port 0 and 99999, and "h:²" (isdigit() is true, int() raises) escaped the first-run screen as a bare
ValueError. Saved peers read back the same, IPv6 ones in brackets."""
from __future__ import annotations

import argparse

import pytest

from core.node.config import ConfigError, first_run_settings, load, peer, save
from core.torrent import cli as torrent_cli
from core.torrent.magnet import format_peer, parse_peer

from .support import config_error

CID = "0x02" + "ab" * 32
PEERS = {"h:6881": ("h", 6881), " 10.0.0.2:1 ": ("10.0.0.2", 1), "[::1]:6881": ("::1", 6881),
         "h:65535": ("h", 65535), "h:0": None, "h:65536": None, "h:99999": None, "h:\u00b2": None, "h": None,
         ":80": None, "h:": None, "h:-1": None}


@pytest.mark.parametrize("text,expected", PEERS.items(), ids=range(len(PEERS)))
def test_every_place_reads_a_peer_the_same(text, expected, tmp_path):
    assert parse_peer(text.strip()) == expected
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n[torrent]\npeers = ["{text}"]\n')
    if expected is None:
        for read in (lambda: peer(text), lambda: load(config),
                     lambda: first_run_settings(role="member", community_id=CID, data_dir=tmp_path,
                                                torrent_peers=[text])):
            with pytest.raises(ConfigError) as e:
                read()
            assert str(e.value) == (f"BitTorrent peer {text!r} is not HOST:PORT (or [IPv6]:PORT), with a port "
                                    "from 1 to 65535")
        with pytest.raises(argparse.ArgumentTypeError):
            torrent_cli._peer(text)
        return
    s = first_run_settings(role="member", community_id=CID, data_dir=tmp_path, torrent_peers=[text])
    assert peer(text) == torrent_cli._peer(text) == expected
    assert load(config).torrent_peers == s.torrent_peers == [expected]
    save(s, tmp_path / "saved.toml")                       # written as parse_peer reads it back
    assert load(tmp_path / "saved.toml").torrent_peers == [expected]
    assert parse_peer(format_peer(*expected)) == expected


def test_a_peer_that_is_not_text_is_a_config_error(tmp_path):
    assert config_error(tmp_path, "[torrent]\npeers = [6881]\n") == (
        "BitTorrent peer 6881 is not HOST:PORT (or [IPv6]:PORT), with a port from 1 to 65535")


def test_the_listen_address_has_one_rule(tmp_path):
    """`[torrent] listen` is read by core.node.config.listen_address (core.torrent.magnet.parse_listen) in the
    config, the node and both settings forms; port 0 means any free port. Before, the config took anything, the node
    failed to start on "0.0.0.0" or "0.0.0.0:any" (int()), and the forms showed "any free port" for them."""
    from core.node.config import listen_address
    from core.torrent.settings import TorrentSettings
    assert listen_address("0.0.0.0:0") == ("0.0.0.0", 0)
    assert listen_address("[::]:6881") == ("::", 6881)
    assert TorrentSettings(listen_host="::", listen_port=6881).settings_pack()["listen_interfaces"] == "[::]:6881"
    for bad in ("0.0.0.0", "0.0.0.0:", "0.0.0.0:any", ":6881", "h:65536", "h:\u00b2"):
        with pytest.raises(ConfigError, match="is not HOST:PORT"):
            listen_address(bad)
        assert config_error(tmp_path, f'[torrent]\nlisten = "{bad}"\n') == (
            f"torrent.listen {bad!r} is not HOST:PORT (or [IPv6]:PORT), with a port from 0 (any free port) to 65535")
    s = first_run_settings(role="member", community_id=CID, data_dir=tmp_path, torrent_port=0)
    assert listen_address(s.torrent_listen) == ("0.0.0.0", 0)
