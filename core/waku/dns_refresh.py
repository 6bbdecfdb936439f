"""Keeping an enrtree's records current: the tree is walked at start, then again every `interval_s` (30 min).

EIP-1459: a tree's root changes whenever its content does, and every other record is named by the hash of its
text. So each re-walk reads the root (one TXT lookup); when its e= hash is the one of the last complete walk,
that is all. When it changed, the walk reads only the records whose hash it has not seen before (a cache of
verified records, pruned to the current tree after each complete walk), and every record of the new tree goes
to the caller (PeerManager feeds them to the peer store, which merges what it knew).

A failed walk (no root, a bad signature, no DNS at all) or an incomplete one (records that could not be read, a
bound reached) is retried sooner, backing off: `retry_s`, then twice that, and so on up to `interval_s`. The
first failure in a row is logged as a warning, the following ones at debug level, the recovery at info level.
The clock (seconds) is injectable; nothing here sleeps: the caller asks `due()` and calls `refresh()`.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from core.waku.dns_discovery import DnsDiscovery, Resolver, Root, dnspython_resolver
from core.waku.enr import Enr

log = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 30 * 60.0
DEFAULT_RETRY_S = 60.0
MAX_CACHE = 5_000               # verified records kept between walks (a tree of 100 nodes has ~110)


@dataclass
class Refresh:
    """One refresh: `enrs` are the tree's records (all of them, when it changed; none when unchanged)."""
    enrs: list[Enr] = field(default_factory=list)
    changed: bool = False
    unchanged: bool = False
    seq: int | None = None
    lookups: int = 0
    cached: int = 0
    error: str | None = None          # the walk failed: nothing learnt
    errors: list[str] = field(default_factory=list)   # records skipped below the root (walk incomplete)
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.errors and not self.truncated


class DnsRefresh:
    def __init__(self, url: str, resolver: Resolver | None = None, *, interval_s: float = DEFAULT_INTERVAL_S,
                 retry_s: float = DEFAULT_RETRY_S, clock: Callable[[], float] = time.time,
                 max_cache: int = MAX_CACHE, **bounds):
        if interval_s <= 0 or retry_s <= 0:
            raise ValueError("the DNS refresh interval and retry delay must be > 0 s")
        self.url, self.resolver, self.interval_s, self.retry_s = url, resolver, interval_s, retry_s
        self.clock, self.max_cache, self.bounds = clock, max_cache, bounds
        self.cache: dict[str, str] = {}
        self.root: Root | None = None       # root of the last complete walk
        self.next_at = clock()              # due at once
        self.failures = 0                   # failed or incomplete walks in a row
        self.refreshes = 0

    def due(self) -> bool:
        return self.clock() >= self.next_at

    def refresh(self) -> Refresh:
        """Walk now (blocking: DNS lookups); never raises for DNS or tree errors, which are in the result."""
        out = Refresh()
        try:
            resolver = self.resolver or dnspython_resolver()
            res = DnsDiscovery(resolver, cache=self.cache, **self.bounds).discover(
                self.url, known=self.root)
        except Exception as e:  # noqa: BLE001 - DnsDiscoveryError, or no resolver configuration at all
            out.error = str(e) or type(e).__name__
        else:
            out.seq, out.lookups, out.cached = res.seq, res.lookups, res.cached
            out.unchanged, out.errors, out.truncated = res.unchanged, res.errors, res.truncated
            if not res.unchanged:
                out.enrs, out.changed = res.enrs, self.root is None or res.root != self.root
                if not res.errors and not res.truncated:
                    self.root = res.root
                    self._prune(res.visited)
            self._trim()
        self.refreshes += 1
        self._schedule(out)
        return out

    def _prune(self, keep: set[str]) -> None:
        for name in [n for n in self.cache if n not in keep]:
            del self.cache[name]

    def _trim(self) -> None:
        while len(self.cache) > self.max_cache:
            del self.cache[next(iter(self.cache))]      # oldest first (insertion order)

    def _schedule(self, r: Refresh) -> None:
        now = self.clock()
        if r.ok:
            if self.failures:
                log.info("dns discovery from %s works again after %d failed walks", self.url, self.failures)
            self.failures = 0
            self.next_at = now + self.interval_s
            return
        self.failures += 1
        delay = min(self.retry_s * 2 ** min(self.failures - 1, 32), self.interval_s)
        self.next_at = now + delay
        why = r.error or (f"{len(r.errors)} records unreadable (first: {r.errors[0]})" if r.errors
                          else "a bound was reached before the end of the tree")
        if self.failures == 1:
            log.warning("dns discovery from %s failed: %s; retrying in %.0f s, backing off (further failures "
                        "are logged at debug level)", self.url, why, delay)
        else:
            log.debug("dns discovery from %s failed again (%d in a row): %s; next try in %.0f s", self.url,
                      self.failures, why, delay)
