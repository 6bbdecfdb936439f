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
