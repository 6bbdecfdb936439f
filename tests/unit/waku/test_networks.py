"""Network presets: `--network status` / `[waku] network = "status"` set defaults; explicit options win."""
import pytest

from core.node.config import ConfigError, dump, load
from core.node.runner import waku_node_config
from core.waku import dns_discovery
from core.waku.cli import register
from core.waku.networks import STATUS_PROD_ENRTREE, UnknownNetwork, resolve

STATUS_TOPICS = ("/waku/2/rs/16/32", "/waku/2/rs/16/64", "/waku/2/rs/16/128", "/waku/2/rs/16/256")


def test_status_preset_is_the_status_fleet():
    r = resolve("status")
    assert (r.cluster_id, r.shards, r.pubsub_topics, r.max_message_size) == (16, (32, 64, 128, 256), STATUS_TOPICS,
                                                                             1024 * 1024)
    assert r.enrtree_url == STATUS_PROD_ENRTREE
    pub, domain = dns_discovery.parse_url(r.enrtree_url)   # a well-formed tree URL with a valid key
    assert domain == "boot.prod.status.nodes.status.im" and len(pub) == 33


def test_local_is_the_default_and_has_no_discovery():
    for name in (None, "local", " LOCAL "):
        r = resolve(name)
        assert (r.cluster_id, r.shards, r.pubsub_topics, r.enrtree_url) == (16, (32,), ("/waku/2/rs/16/32",), None)


def test_explicit_options_win_over_the_preset():
    r = resolve("status", shards=[7])
    assert (r.cluster_id, r.shards, r.pubsub_topics, r.enrtree_url) == (16, (7,), ("/waku/2/rs/16/7",),
                                                                        STATUS_PROD_ENRTREE)
    r = resolve("status", cluster_id=99, enrtree_url="", max_message_size=153600)
    assert (r.cluster_id, r.shards, r.enrtree_url, r.max_message_size) == (99, (32, 64, 128, 256), None, 153600)
    assert r.pubsub_topics[0] == "/waku/2/rs/99/32"
    r = resolve("status", pubsub_topics=["/waku/2/rs/16/1"], enrtree_url="enrtree://X@example.org")
    assert (r.pubsub_topics, r.enrtree_url) == (("/waku/2/rs/16/1",), "enrtree://X@example.org")


def test_an_unknown_network_is_refused_in_words():
    with pytest.raises(UnknownNetwork, match="unknown waku network 'mainnet': choose one of local, status"):
        resolve("mainnet")


def _wakunode_args(*argv):
    import argparse
    p = argparse.ArgumentParser()
    register(p.add_subparsers())
    return p.parse_args(["wakunode", *argv])


def test_the_cli_defaults_let_the_preset_decide():
    a = _wakunode_args("--network", "status", "--shard", "32")
    r = resolve(a.network, cluster_id=a.cluster, shards=a.shard, pubsub_topics=a.pubsub_topic,
                enrtree_url="" if a.no_discovery else a.enrtree, max_message_size=a.max_message_size)
    assert (r.cluster_id, r.shards, r.enrtree_url, r.max_message_size) == (16, (32,), STATUS_PROD_ENRTREE,
                                                                           1024 * 1024)
    a = _wakunode_args("--network", "status", "--no-discovery")
    assert resolve(a.network, enrtree_url="" if a.no_discovery else a.enrtree).enrtree_url is None


def _config(tmp_path, body):
    f = tmp_path / "node.toml"
    f.write_text(f'data_dir = "data"\n{body}')
    return load(f)


def test_config_network_key_reaches_the_node_config(tmp_path):
    s = _config(tmp_path, '[waku]\nnetwork = "status"\n')
    c = waku_node_config(s)
    assert (c.cluster_id, c.shards, c.topics(), c.enrtree_url) == (16, (32, 64, 128, 256), STATUS_TOPICS,
                                                                    STATUS_PROD_ENRTREE)
    assert c.peer_store_path == s.data_dir / "waku-peers.sqlite"
    f = tmp_path / "again.toml"
    f.write_text(dump(s, tmp_path))
    assert load(f).waku_network == "status"
    local = waku_node_config(_config(tmp_path, "[waku]\n"))
    assert (local.topics(), local.enrtree_url) == (("/waku/2/rs/16/32",), None)


def test_config_unknown_network_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="waku.network must be local or status, not 'mainnet'"):
        _config(tmp_path, '[waku]\nnetwork = "mainnet"\n')
