"""The [waku] rate-limit keys of the node's TOML reach the embedded node's NodeConfig."""
import pytest

from core.node.config import ConfigError, NodeSettings, dump, load
from core.node.runner import waku_node_config
from core.waku.ratelimit import IP_BURST, IP_RATE_S, PEER_BURST, PEER_RATE_S

LIMITS = """
[waku]
requests_per_s = 7.5
request_burst = 11
requests_per_ip_s = 13.0
request_burst_per_ip = 17
rate_exempt_ips = ["10.0.0.2", "127.0.0.1"]
"""


def _config(tmp_path, body: str) -> NodeSettings:
    f = tmp_path / "node.toml"
    f.write_text(f'data_dir = "data"\n{body}')
    return load(f)


def test_rate_limit_keys_reach_node_config(tmp_path):
    c = waku_node_config(_config(tmp_path, LIMITS))
    assert (c.requests_per_s, c.request_burst, c.requests_per_ip_s, c.request_burst_per_ip, c.rate_exempt_ips) == \
        (7.5, 11, 13.0, 17, ("10.0.0.2", "127.0.0.1"))


def test_rate_limits_default_to_the_desktop_node_defaults(tmp_path):
    c = waku_node_config(_config(tmp_path, "[waku]\n"))
    assert (c.requests_per_s, c.request_burst, c.requests_per_ip_s, c.request_burst_per_ip, c.rate_exempt_ips) == \
        (PEER_RATE_S, PEER_BURST, IP_RATE_S, IP_BURST, ())


def test_rate_limit_keys_survive_dump_and_load(tmp_path):
    s = _config(tmp_path, LIMITS)
    f = tmp_path / "again.toml"
    f.write_text(dump(s, tmp_path))
    again = load(f)
    assert (again.waku_requests_per_s, again.waku_request_burst, again.waku_requests_per_ip_s,
            again.waku_request_burst_per_ip, again.waku_rate_exempt_ips) == (7.5, 11, 13.0, 17,
                                                                             ["10.0.0.2", "127.0.0.1"])


@pytest.mark.parametrize("line", ["requests_per_s = 0", "request_burst_per_ip = 0"])
def test_a_zero_rate_limit_is_refused_in_words(tmp_path, line):
    with pytest.raises(ConfigError, match="requests_per_s and requests_per_ip_s must be > 0"):
        _config(tmp_path, f"[waku]\n{line}\n")
