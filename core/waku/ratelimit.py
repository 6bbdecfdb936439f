"""Token buckets for the request/response services (store, lightpush): over a limit a client gets the protocol's
TOO_MANY_REQUESTS (429) answer instead of service. The clock is injectable.

Two buckets per request (`RequestLimiter`): the peer ID's and the source address's. Peer IDs are free to make,
so a per-peer limit alone lets one machine take as much service as it likes by rotating identities; the address
bucket caps what one IP gets, whatever identities it uses. Protected peers (configured ones and the peers we
dialled) and `exempt_ips` skip the address bucket (they may sit behind one address with strangers) but keep
their per-peer one.
"""
from __future__ import annotations

import collections
import logging
import time
from collections import OrderedDict
from typing import Callable

log = logging.getLogger(__name__)
# defaults for a desktop node (NodeConfig, `archivist wakunode`): a peer id may ask 100 requests/s (burst 500);
# one address, whatever its peer ids, twice that (a NAT may hide a few genuine peers)
PEER_RATE_S, PEER_BURST = 100.0, 500
IP_RATE_S, IP_BURST = 200.0, 1000


class PeerRateLimiter:
    """One token bucket per key (peer ID or IP). The table keeps the `max_peers` most recently seen keys
    (least recently seen forgotten first, O(1))."""

    def __init__(self, rate_per_s: float = 20.0, burst: int = 100, clock: Callable[[], float] = time.monotonic,
                 max_peers: int = 10_000):
        self.rate, self.burst, self.clock, self.max_peers = rate_per_s, burst, clock, max_peers
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, key: str) -> bool:
        now = self.clock()
        tokens, last = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        ok = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if ok else tokens, now)
        while len(self._buckets) > self.max_peers:
            self._buckets.popitem(last=False)
        return ok


class RequestLimiter:
    """The per-peer and per-address buckets together; refusals are counted by which bucket was empty."""

    def __init__(self, *, per_peer_s: float, peer_burst: int, per_ip_s: float, ip_burst: int,
                 exempt_ips: tuple[str, ...] = (), clock: Callable[[], float] = time.monotonic):
        self.peers = PeerRateLimiter(per_peer_s, peer_burst, clock)
        self.ips = PeerRateLimiter(per_ip_s, ip_burst, clock)
        self.exempt_ips = frozenset(exempt_ips)
        self.refused: collections.Counter[str] = collections.Counter()  # "peer" / "address" -> count

    def allow(self, peer: str, ip: str | None, *, protected: bool = False) -> bool:
        """`ip` None: unknown (a connection we dialled); only the peer's bucket applies."""
        if not self.peers.allow(peer):
            self.refused["peer"] += 1
            return False
        if protected or ip is None or ip in self.exempt_ips:
            return True
        if not self.ips.allow(ip):
            if not self.refused["address"]:
                log.info("rate limit: %s is over its address budget; answering 429 (counted, logged once)", ip)
            self.refused["address"] += 1
            return False
        return True
