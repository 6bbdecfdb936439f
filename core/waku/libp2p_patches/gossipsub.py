"""Fixes 1, 3, 4, 5c, 14 and 26: GossipSub v1.1 on the Waku relay protocol id with nwaku's parameters
(`WakuGossipSub`). The registry (libp2p_patches/__init__.py) says where each problem lives in py-libp2p 0.8.1.

1. GossipSub only accepts /meshsub/* ids in add_peer (pubsub/gossipsub.py GossipSub.add_peer, ValueError): the
   Waku relay id is mapped to GossipSub v1.1 behaviour.
3. The equivocation check keys on from+seqno, empty for every unsigned message (GossipSub._check_equivocation):
   disabled.
4. The message cache keys on from+seqno too (pubsub/mcache.py MessageCache.put; IHAVE/IWANT would all collide):
   keyed by the message id.
5c. The 10 msg/s spam limit (spam_protection_enabled=True by default): disabled through the constructor.
14. GossipSub.publish queues every message for every connected peer not subscribed to its topic, "in case the
    subscription is still on its way" (GossipSub.publish, second loop over pubsub.peers, and
    _prune_pending_messages): a peer that relays another shard, e.g. a light client, gets a queue that is rebuilt
    by a list comprehension on every message, trimmed at 100 with a WARNING per message, and never sent. Ours:
    only peers identified less than PENDING_GRACE_S ago are queued, in a bounded deque that drops its oldest
    silently; expired entries are popped from its head.
26. publish walks only those recently identified peers (fastpath.gossip_publish).
"""
from __future__ import annotations

import hashlib
import time
from collections import deque
from typing import Callable

from libp2p.custom_types import TProtocol
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
from libp2p.pubsub.mcache import CacheEntry, MessageCache
from libp2p.pubsub.pb import rpc_pb2

from core.waku.libp2p_patches.fastpath import gossip_publish

WAKU_RELAY_PROTOCOL = TProtocol("/vac/waku/relay/2.0.0")


def waku_message_id(msg: rpc_pb2.Message) -> bytes:
    """11/WAKU2-RELAY message id: sha256 of the data, raw 32 bytes."""
    return hashlib.sha256(msg.data).digest()


class IdMessageCache(MessageCache):
    """fix 4: message cache keyed by the Waku message id instead of from+seqno."""

    def put(self, msg: rpc_pb2.Message) -> None:
        mid = waku_message_id(msg)
        if mid in self.msgs:
            return
        self.msgs[mid] = msg
        self.history[0].append(CacheEntry(mid, msg.topicIDs))


PENDING_GRACE_S = 5.0   # fix 14: how long after identify a peer's subscriptions may still be on their way


class _Discard:
    """fix 14: the pending "queue" of a settled peer: appends go nowhere."""

    def append(self, item) -> None:
        pass

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


class PendingQueues(dict):
    """fix 14: `_pending_messages` of WakuGossipSub. Peers identified within the grace time (or not identified
    yet) get a bounded deque; settled peers get a _Discard, which is not stored (so `peer in queues` stays False
    and flush_pending_messages has nothing to send)."""

    def __init__(self, router: "WakuGossipSub"):
        super().__init__()
        self._router = router

    def __missing__(self, peer_id):
        if self._router.pending_settled(peer_id):
            return _Discard()
        q = self[peer_id] = deque(maxlen=self._router._max_pending_messages_per_peer)
        return q


class WakuGossipSub(GossipSub):
    """GossipSub v1.1 on /vac/waku/relay/2.0.0 with nwaku's parameters (fixes 1, 3, 4, 5c, 14)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, **kw):
        params = dict(protocols=[WAKU_RELAY_PROTOCOL], degree=6, degree_low=4, degree_high=8,
                      gossip_window=3, gossip_history=5, heartbeat_initial_delay=0.1, heartbeat_interval=1,
                      time_to_live=60, spam_protection_enabled=False, adaptive_gossip_enabled=False,
                      eclipse_protection_enabled=False)
        params.update(kw)
        super().__init__(**params)
        self.mcache = IdMessageCache(params["gossip_window"], params["gossip_history"])
        self._clock = clock
        self._identified_at: dict = {}
        self._recent: dict = {}   # fix 26: peers identified within PENDING_GRACE_S
        self._pending_messages = PendingQueues(self)

    def add_peer(self, peer_id, protocol_id) -> None:
        if protocol_id == WAKU_RELAY_PROTOCOL:
            protocol_id = PROTOCOL_ID_V11
        super().add_peer(peer_id, protocol_id)
        self._identified_at[peer_id] = self._recent[peer_id] = self._clock()

    def remove_peer(self, peer_id) -> None:
        super().remove_peer(peer_id)
        self._identified_at.pop(peer_id, None)
        self._recent.pop(peer_id, None)

    publish = gossip_publish   # fix 26 (fastpath.py)

    def recently_identified(self) -> list:
        """fix 26: peers identified within PENDING_GRACE_S (the only ones fix 14 still queues for)."""
        for p in [p for p, at in self._recent.items() if self._clock() - at > PENDING_GRACE_S]:
            del self._recent[p]
            self._pending_messages.pop(p, None)   # settled: what upstream's walk would have pruned
        return list(self._recent)

    def pending_settled(self, peer_id) -> bool:
        """fix 14: identified long enough ago that a missing subscription means "not subscribed"."""
        at = self._identified_at.get(peer_id)
        return at is not None and self._clock() - at > PENDING_GRACE_S

    def _prune_pending_messages(self, peer_id) -> None:
        """fix 14: O(expired) instead of O(queue) per message, no WARNING (the deque's maxlen drops the oldest)."""
        queue = self._pending_messages.get(peer_id)
        if queue is None:
            return
        if self.pending_settled(peer_id):  # its subscriptions are known by now: standard GossipSub rules
            self._pending_messages.pop(peer_id, None)
            return
        oldest_allowed = time.time() - self._pending_messages_ttl  # upstream stamps entries with time.time()
        while queue and queue[0][0] < oldest_allowed:
            queue.popleft()
        if not queue:
            self._pending_messages.pop(peer_id, None)

    def _check_equivocation(self, msg: rpc_pb2.Message) -> bool:
        return True  # StrictNoSign: no from/seqno to key on; duplicates are caught by the seen cache

