"""py-libp2p fix 5b (see libp2p_fixes.py): publisher back-pressure on the per-peer relay send queues that never
waits for a peer that has stopped reading.

py-libp2p 0.8.1 queues every outgoing pubsub RPC per peer (pubsub/rpc_queue.py RpcQueue) and, once the queue is
full, drops (gossipsub.py GossipSub.send_rpc -> _handle_dropped_rpc). Our own publishes wait instead while a
queue is above a high-water mark, so a burst from the app is not silently cut at the queue size. Until issue 21
the wait looked at the deepest queue of *any* peer: one relay peer that stopped reading (a stopped node whose
socket stayed open, or a peer that grants a large yamux window and then reads nothing) blocked its writer in
`socket.send` forever, its queue passed the mark, and from then on every publish of the node, and so every
lightpush request, waited forever (the full load benchmark hung in its lightpush phase).

Now each queue records when it last moved (a pop, i.e. the previous RPC was written; or work arriving on an
empty queue), and a publisher waits only for queues above the mark that moved within `stall_s`. A queue that
has not moved for `stall_s` is left to fill to its size and then drop, as go-libp2p-pubsub does for every slow
peer. Lightpush requests (remote peers' work) do not wait at all (`WakuNode.publish(..., wait=False)`): another
peer's pace must not set the rate at which the node serves a third one.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

import trio

HIGH_WATER = 1024   # our publishes wait while a moving peer queue holds more RPCs than this
STALL_S = 1.0       # a queue with work that has not moved for this long is not waited for


class QueueWatch:
    """The progress of every per-peer RpcQueue of one Pubsub (each is `watch`ed as Pubsub creates it)."""

    def __init__(self, *, high_water: int = HIGH_WATER, stall_s: float = STALL_S,
                 clock: Callable[[], float] = time.monotonic):
        self.high_water, self.stall_s, self.clock = high_water, stall_s, clock
        self._room = trio.Event()   # set (and replaced) whenever a queue drains to the mark

    def watch(self, queue) -> None:
        """Wrap `queue`'s push and pop (instance attributes; Pubsub calls them by attribute) to keep
        `queue.moved_at`: the last pop, or the push that gave an empty queue work."""
        push, pop = queue.push, queue.pop
        queue.moved_at = self.clock()

        def watched_push(rpc, priority: bool = False) -> bool:
            if not len(queue):
                queue.moved_at = self.clock()
            return push(rpc, priority)

        async def watched_pop():
            rpc = await pop()
            queue.moved_at = self.clock()
            if len(queue) <= self.high_water:
                self._room.set()
                self._room = trio.Event()
            return rpc

        queue.push, queue.pop = watched_push, watched_pop

    def stalled(self, queue) -> bool:
        """Work is waiting and the queue has not moved for `stall_s` (its writer is stuck on the peer)."""
        return len(queue) > 0 and self.clock() - getattr(queue, "moved_at", self.clock()) > self.stall_s

    def blocking(self, queues: Iterable) -> list:
        """The queues a publisher waits for: above the mark and still moving."""
        return [q for q in queues if len(q) > self.high_water and not self.stalled(q)]

    async def wait_for_room(self, queues: Callable[[], Iterable]) -> None:
        """Return once no moving queue is above the mark; a queue that stops moving stops counting after
        `stall_s` (re-checked then, or whenever a queue drains to the mark)."""
        while self.blocking(queues()):
            with trio.move_on_after(self.stall_s):
                await self._room.wait()
