"""Fixes 2, 5 and 16: the Waku relay's Pubsub (`WakuPubsub`) and its per-peer send queues.

2. Pubsub.publish() always sets `from` and `seqno` (pubsub/pubsub.py Pubsub.publish; js-waku drops such messages
   under StrictNoSign): we build the message ourselves (data + topic only) and push it.
5. Silent drops: the 32-slot subscription channel (pubsub.py SUBSCRIPTION_CHANNEL_SIZE; we deliver through a
   callback instead, 5a), the 32-RPC per-peer send queue (pubsub/rpc_queue.py OutBoundQueueSize; enlarged, 5b,
   and our own publishes wait while a queue that is still moving is above a high-water mark; never for a peer
   that stopped reading, and lightpush never waits: sendq.py).
16. Pubsub caps every RPC at 1 MiB both ways (pubsub/rpc_queue.py DefaultMaxMessageSize: the per-peer queue
    silently drops a bigger outbound RPC, gossipsub.py GossipSub.send_rpc -> _handle_dropped_rpc "oversized";
    Pubsub(max_inbound_rpc_size=) on reads, where a bigger one resets the peer's stream and drops the peer). An
    RPC carries the message plus ~300 bytes (topic, signed peer record), so a message within the Status fleet's
    1 MiB limit was silently never sent, and one from js-waku (its cap: 1 MiB encoded) cost us the peer. Both
    limits are relay_rpc_limit(max_message_size) = max(1 MiB, 2 x max_message_size) per node: the node's own
    message limit governs, and an oversize message up to twice the limit is read, refused by the relay
    validator with a log line naming its size, and the peer is kept.
"""
from __future__ import annotations

from typing import Callable

from libp2p.pubsub import rpc_queue
from libp2p.pubsub.pb import rpc_pb2
from libp2p.pubsub.pubsub import Pubsub

from core.waku.libp2p_patches.fastpath import InlinePushManager
from core.waku.libp2p_patches.gossipsub import waku_message_id
from core.waku.libp2p_patches.sendq import QueueWatch

SEND_QUEUE_SIZE = 4096          # per-peer outbound RPCs (py-libp2p: 32); the high-water mark: sendq.py


# --- fix 5b: per-peer send queue size (the default argument is bound at definition time) ---
def enlarge_send_queues(size: int = SEND_QUEUE_SIZE) -> None:
    """Global: every RpcQueue created from now on holds `size` RPCs (idempotent)."""
    defaults = rpc_queue.RpcQueue.__init__.__defaults__
    rpc_queue.RpcQueue.__init__.__defaults__ = (size, *defaults[1:])


def relay_rpc_limit(max_message_size: int) -> int:
    """fix 16: the largest pubsub RPC sent or read, for a node whose message limit is `max_message_size`."""
    return max(rpc_queue.DefaultMaxMessageSize, 2 * max_message_size)


class _SizedQueues(dict):
    """fix 16: Pubsub creates each peer's RpcQueue with the 1 MiB default; every queue stored here gets ours.
    fix 5b: and is watched for progress (sendq.QueueWatch)."""

    def __init__(self, max_rpc_size: int, watch: QueueWatch):
        super().__init__()
        self.max_rpc_size, self.watch = max_rpc_size, watch

    def __setitem__(self, peer_id, queue) -> None:
        queue.max_message_size = self.max_rpc_size
        self.watch.watch(queue)
        super().__setitem__(peer_id, queue)


class WakuPubsub(Pubsub):
    """Pubsub with StrictNoSign and sha256 ids that hands every validated message to `on_message`
    synchronously (fix 5a), publishes unsigned messages (fix 2) and sends and reads RPCs up to `max_rpc_size`
    (fix 16; default: for 1 MiB messages)."""

    def __init__(self, host, router, on_message: Callable[[str, rpc_pb2.Message], None], *,
                 max_rpc_size: int | None = None, **kw):
        max_rpc_size = max_rpc_size or relay_rpc_limit(1024 * 1024)
        super().__init__(host, router, strict_signing=False, msg_id_constructor=waku_message_id,
                         seen_ttl=120, cache_size=None, max_inbound_rpc_size=max_rpc_size, **kw)
        self.send_watch = QueueWatch()
        self.peer_queues = _SizedQueues(max_rpc_size, self.send_watch)
        self._on_message = on_message

    @property
    def manager(self):
        """fix 24: the service manager, with relayed messages queued for one worker (fastpath.py)."""
        inline = self.__dict__.get("_inline_manager")
        if inline is None or inline._manager is not self._manager:
            inline = self.__dict__["_inline_manager"] = InlinePushManager(self._manager, self)
        return inline

    def notify_subscriptions(self, publish_message: rpc_pb2.Message) -> None:
        for topic in publish_message.topicIDs:
            if topic in self.topic_ids:
                self._on_message(topic, publish_message)

    def send_queue_depth(self) -> int:
        return max((len(q) for q in self.peer_queues.values()), default=0)

    async def publish_unsigned(self, topic: str, data: bytes, *, wait: bool = True) -> None:
        """`wait`: back-pressure (fix 5b) from peers that are still reading; False for remote peers' work."""
        if wait:
            await self.send_watch.wait_for_room(self.peer_queues.values)
        await self.push_msg(self.my_id, rpc_pb2.Message(data=data, topicIDs=[topic]))

