from core.waku.ratelimit import PeerRateLimiter


def test_token_bucket_per_peer_with_fake_clock():
    now = [0.0]
    rl = PeerRateLimiter(rate_per_s=2, burst=3, clock=lambda: now[0])
    assert [rl.allow("a") for _ in range(4)] == [True, True, True, False]
    assert rl.allow("b")  # other peers are unaffected
    now[0] += 0.5  # one token back
    assert rl.allow("a") and not rl.allow("a")
    now[0] += 100
    assert sum(rl.allow("a") for _ in range(10)) == 3  # refills only up to the burst


def test_peer_table_is_bounded():
    rl = PeerRateLimiter(max_peers=5, clock=lambda: 0.0)
    for i in range(50):
        rl.allow(f"p{i}")
    assert len(rl._buckets) <= 6


def test_least_recently_seen_peer_is_forgotten_first():
    now = [0.0]
    rl = PeerRateLimiter(rate_per_s=0, burst=1, max_peers=2, clock=lambda: now[0])
    assert rl.allow("a") and rl.allow("b")
    assert not rl.allow("a")          # a is now the most recently seen
    assert rl.allow("c")              # b is forgotten, not a
    assert not rl.allow("a") and list(rl._buckets) == ["c", "a"]


def test_fresh_peer_ids_share_their_address_budget():
    from core.waku.ratelimit import RequestLimiter
    now = [0.0]
    rl = RequestLimiter(per_peer_s=1, peer_burst=5, per_ip_s=1, ip_burst=3, clock=lambda: now[0])
    # every request from a new peer id: the per-peer bucket alone would let all of them through
    assert [rl.allow(f"fresh{i}", "10.0.0.1") for i in range(5)] == [True, True, True, False, False]
    assert rl.refused == {"address": 2}
    assert rl.allow("fresh9", "10.0.0.2")                        # another address has its own budget
    assert rl.allow("friend", "10.0.0.1", protected=True)        # protected peers skip the address bucket
    assert rl.allow("dialled", None)                             # a connection we dialled has no address
    now[0] += 1.0
    assert rl.allow("fresh10", "10.0.0.1") and not rl.allow("fresh11", "10.0.0.1")  # one token per second


def test_per_peer_bucket_applies_to_protected_peers_and_exempt_addresses():
    from core.waku.ratelimit import RequestLimiter
    rl = RequestLimiter(per_peer_s=0, peer_burst=2, per_ip_s=0, ip_burst=1, exempt_ips=("127.0.0.1",),
                        clock=lambda: 0.0)
    assert [rl.allow("friend", "10.0.0.1", protected=True) for _ in range(3)] == [True, True, False]
    assert [rl.allow(f"p{i}", "127.0.0.1") for i in range(5)] == [True] * 5   # exempt address
    assert rl.refused == {"peer": 1}
