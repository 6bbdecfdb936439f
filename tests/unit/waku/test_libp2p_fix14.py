"""Fix 14 (core/waku/libp2p_patches/gossipsub.py): GossipSub's identify-pending queue for peers that relay another shard.
Two real nodes on 127.0.0.1: `a` relays the default shard, `b` (a light client, say) relays shard 1 only."""
import logging
import os
import time
import types
from collections import defaultdict

import trio
from libp2p.peer.id import ID
from libp2p.pubsub.gossipsub import GossipSub

from core.waku.libp2p_patches.gossipsub import PENDING_GRACE_S
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig, WakuNode
from core.waku.topics import static_shard_topic

UPSTREAM_LIMIT = 100  # GossipSub max_pending_messages_per_peer default


def _run_pair(body) -> None:
    """Start a and b, connect b to a, wait until a knows b's subscription (shard 1), then run body(a, b, peer)."""
    async def main():
        a = WakuNode(NodeConfig(ws_port=None))
        b = WakuNode(NodeConfig(ws_port=None, shards=(1,)))
        async with trio.open_nursery() as n:
            await n.start(a.run)
            await n.start(b.run)
            await b.connect(f"{a.listen_addrs()[0]}")
            peer = ID.from_base58(b.peer_id)
            other = static_shard_topic(a.config.cluster_id, 1)
            # py-libp2p's own events: set when b's pubsub stream is added and when its subscription arrives
            await a.pubsub.wait_for_peer(peer, timeout=10)
            await a.pubsub.wait_for_subscription(peer, other, timeout=10)
            assert peer in a.pubsub.peers and peer in a.pubsub.peer_topics[other]
            await body(a, b, peer)
            n.cancel_scope.cancel()
    trio.run(main)


async def _flood(a: WakuNode, count: int) -> None:
    topic = a.config.topics()[0]
    for i in range(count):
        await a.publish(topic, WakuMessage(os.urandom(64), "/a/1/b/c", timestamp=time.time_ns()))


def test_fix14_settled_peers_get_no_pending_queue_and_no_warnings(caplog):
    now = [0.0]
    seen = {}

    async def body(a, b, peer):
        a.router._clock = lambda: now[0]
        a.router._identified_at[peer] = 0.0
        await _flood(a, 150)  # within the grace time: queued, bounded, silently
        seen["grace"] = len(a.router._pending_messages.get(peer, ()))
        now[0] = PENDING_GRACE_S + 1
        await _flood(a, 150)  # settled: b's subscriptions are known, nothing is queued for it
        seen["settled"] = peer in a.router._pending_messages
    with caplog.at_level(logging.WARNING, logger="libp2p"):
        _run_pair(body)
    assert seen == {"grace": UPSTREAM_LIMIT, "settled": False}
    assert not [r for r in caplog.records if "pending message queue" in r.getMessage()]


def test_fix14_upstream_still_queues_for_unsubscribed_peers_with_a_warning_per_message(caplog):
    """Fails once py-libp2p stops queueing messages for connected peers that are not subscribed to the topic
    (or stops logging a WARNING per dropped one): then drop fix 14."""
    seen = {}

    async def body(a, b, peer):
        a.router._pending_messages = defaultdict(list)
        a.router._prune_pending_messages = types.MethodType(GossipSub._prune_pending_messages, a.router)
        await _flood(a, 150)
        seen["queued"] = len(a.router._pending_messages[peer])
    with caplog.at_level(logging.WARNING, logger="libp2p"):
        _run_pair(body)
    assert seen["queued"] == UPSTREAM_LIMIT + 1  # trimmed to 100 before each append
    warnings = [r for r in caplog.records if "pending message queue" in r.getMessage()]
    # one per message once the queue is full; a prune of another path (a flush as b's identify ends, a heartbeat)
    # that finds it full adds one
    assert 150 - UPSTREAM_LIMIT - 1 <= len(warnings) <= 150 - UPSTREAM_LIMIT + 1
