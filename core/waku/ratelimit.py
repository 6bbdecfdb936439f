"""Per-peer token buckets for request/response services (store, lightpush): over the limit a peer gets the
protocol's TOO_MANY_REQUESTS (429) answer instead of service. The clock is injectable."""
from __future__ import annotations

import time
from typing import Callable


class PeerRateLimiter:
    def __init__(self, rate_per_s: float = 20.0, burst: int = 100, clock: Callable[[], float] = time.monotonic,
                 max_peers: int = 10_000):
        self.rate, self.burst, self.clock, self.max_peers = rate_per_s, burst, clock, max_peers
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, peer: str) -> bool:
        now = self.clock()
        tokens, last = self._buckets.get(peer, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        ok = tokens >= 1.0
        self._buckets[peer] = (tokens - 1.0 if ok else tokens, now)
        if len(self._buckets) > self.max_peers:  # forget the stalest peer
            self._buckets.pop(min(self._buckets, key=lambda p: self._buckets[p][1]))
        return ok
