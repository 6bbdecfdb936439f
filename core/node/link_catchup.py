"""A member asks the Waku store for its community's archive links: at start, again soon after a query that
failed (the store peer unreachable, slow or refusing), and every LINK_QUERY_EVERY_S after a good one.

Why not only at start: a member whose one startup query failed (its peer still starting, a loaded machine, a
network blip) would otherwise wait for the next relayed link, a week away, with nothing on screen but "no archive
link received yet". Messages already handed to the member (by the store or the relay: same message hash) are not
handed over again, so a re-query does not count every old link as a replay.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from core.node.community import STORE_LOOKBACK_S

log = logging.getLogger(__name__)

LINK_QUERY_RETRY_S = (5, 15, 60, 300)     # after a failed query: soon, then backing off to 5 min
LINK_QUERY_EVERY_S = 600                  # after a good one: links relayed while we were not connected
LOOKBACK_S = STORE_LOOKBACK_S             # the first query: links as far back as a store keeps them (30 days)
OVERLAP_S = 3600                          # later queries reach back this far before the last good one
SEEN_KEPT = 4096                          # message hashes remembered per community (oldest forgotten first)


@dataclass
class _Schedule:
    due: float = 0.0                      # clock time of the next query
    failures: int = 0                     # failed queries in a row
    since: int | None = None              # start of the next query's time range (None: LOOKBACK_S)
    seen: OrderedDict = field(default_factory=OrderedDict)


class LinkCatchUp:
    """Per community: when to ask the store next, from when, and which link messages were already seen."""

    def __init__(self, clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()          # relay deliveries and queries of different communities
        self._schedules: dict[str, _Schedule] = {}

    def _schedule(self, cid: str) -> _Schedule:
        return self._schedules.setdefault(cid, _Schedule())

    def _due(self, cid: str) -> _Schedule | None:
        """The schedule of `cid` if its query is due (call with the lock held)."""
        s = self._schedules.get(cid)
        return s if s is not None and self.clock.now() >= s.due else None

    def due(self, cid: str) -> bool:
        with self._lock:
            return self._due(cid) is not None

    def claim(self, cid: str) -> bool:
        """True if a query is due, and then it is no longer due until finished() says when: a tick that queues
        the query while the community's queue is busy (a long import) does not queue it again at every tick."""
        with self._lock:
            s = self._due(cid)
            if s is not None:
                s.due = float("inf")
            return s is not None

    def first_sighting(self, cid: str, message_hash: bytes | None) -> bool:
        """True the first time a message hash is seen for `cid` (a message without a hash always counts)."""
        if not message_hash:
            return True
        with self._lock:
            seen = self._schedule(cid).seen
            if message_hash in seen:
                return False
            seen[message_hash] = None
            while len(seen) > SEEN_KEPT:
                seen.popitem(last=False)
            return True

    def begin(self, cid: str) -> tuple[int, int]:
        """A query starts: its time range (seconds). Not due again until finished() says when."""
        now = int(self.clock.now())
        with self._lock:
            s = self._schedule(cid)
            s.due = float("inf")
            since = s.since
        return (now - LOOKBACK_S if since is None else since), now + 1

    def finished(self, cid: str, started: int, errors: list) -> float:
        """Record a query that began at `started` (clock seconds); returns the seconds until the next one."""
        with self._lock:
            s = self._schedule(cid)
            if errors:
                s.failures += 1
                delay = LINK_QUERY_RETRY_S[min(s.failures - 1, len(LINK_QUERY_RETRY_S) - 1)]
            else:
                s.failures = 0
                s.since = started - OVERLAP_S
                delay = LINK_QUERY_EVERY_S
            s.due = self.clock.now() + delay
            return delay

    def failures(self, cid: str) -> int:
        with self._lock:
            return self._schedule(cid).failures
