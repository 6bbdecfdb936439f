"""Fix 5b (registry: __init__.py): publisher back-pressure on the per-peer relay send queues that never
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

A stuck peer is then dropped (`stuck_reason`, checked by WakuNode's send watchdog): a queue with work that has
not moved for `disconnect_s` (10 s), or that has stayed full (every new RPC dropped) for as long, gets its
connection closed and its queued RPCs released. Before, a peer that stopped reading held up to 4,096 queued RPCs
(4,096 x 1 MiB at worst) and its connection for good. nim-libp2p (nwaku) disconnects a peer whose non-priority
send queue reaches its limit, and go-yamux (go-libp2p) closes a connection whose write blocks past its
ConnectionWriteTimeout (10 s); we wait out the same 10 s before dropping so a burst a peer is still reading is
not punished.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

import trio

HIGH_WATER = 1024   # our publishes wait while a moving peer queue holds more RPCs than this
STALL_S = 1.0       # a queue with work that has not moved for this long is not waited for
DISCONNECT_S = 10.0  # a queue that has not moved (or stayed full) for this long: its peer is disconnected


class QueueWatch:
    """The progress of every per-peer RpcQueue of one Pubsub (each is `watch`ed as Pubsub creates it)."""

    def __init__(self, *, high_water: int = HIGH_WATER, stall_s: float = STALL_S,
                 disconnect_s: float = DISCONNECT_S, clock: Callable[[], float] = time.monotonic):
        self.high_water, self.stall_s, self.disconnect_s, self.clock = high_water, stall_s, disconnect_s, clock
        self._room = trio.Event()   # set (and replaced) whenever a queue drains to the mark

    def watch(self, queue) -> None:
        """Wrap `queue`'s push and pop (instance attributes; Pubsub calls them by attribute) to keep
        `queue.moved_at`: the last pop, or the push that gave an empty queue work; and `queue.full_since`: the
        first push refused as full since the queue was last below half its size (None otherwise)."""
        push, pop = queue.push, queue.pop
        queue.moved_at = self.clock()
        queue.full_since = None

        def watched_push(rpc, priority: bool = False) -> bool:
            if not len(queue):
                queue.moved_at = self.clock()
            ok = push(rpc, priority)
            if not ok and queue.full_since is None and not queue.closed:
                queue.full_since = self.clock()
            return ok

        async def watched_pop():
            rpc = await pop()
            queue.moved_at = self.clock()
            if queue.full_since is not None and len(queue) < queue._queue.max_size // 2:
                queue.full_since = None
            if len(queue) <= self.high_water:
                self._room.set()
                self._room = trio.Event()
            return rpc

        queue.push, queue.pop = watched_push, watched_pop

    def stalled(self, queue) -> bool:
        """Work is waiting and the queue has not moved for `stall_s` (its writer is stuck on the peer)."""
        return len(queue) > 0 and self.clock() - getattr(queue, "moved_at", self.clock()) > self.stall_s

    def stuck_reason(self, queue) -> str | None:
        """Why the peer of `queue` should be disconnected (None: it should not): no progress for `disconnect_s`
        with work waiting, or full (dropping) for `disconnect_s` without draining to half its size."""
        if queue.closed:
            return None
        now = self.clock()
        idle = now - getattr(queue, "moved_at", now)
        if len(queue) and idle > self.disconnect_s:
            return f"relay send queue has not moved for {idle:.1f} s ({len(queue)} RPCs waiting)"
        full_since = getattr(queue, "full_since", None)
        if full_since is not None and now - full_since > self.disconnect_s:
            return (f"relay send queue full for {now - full_since:.1f} s ({len(queue)} RPCs waiting, new ones "
                    f"dropped)")
        return None

    @staticmethod
    def release(queue) -> int:
        """Close `queue` (later pushes are refused, its writer stops at its next pop) and free what it holds at
        once, not when the writer stuck on the socket lets go; returns how many RPCs were released."""
        n = len(queue)
        queue.close()
        queue._queue._priority.clear()
        queue._queue._non_priority.clear()
        return n

    def blocking(self, queues: Iterable) -> list:
        """The queues a publisher waits for: above the mark and still moving."""
        return [q for q in queues if len(q) > self.high_water and not self.stalled(q)]

    async def wait_for_room(self, queues: Callable[[], Iterable]) -> None:
        """Return once no moving queue is above the mark; a queue that stops moving stops counting after
        `stall_s` (re-checked then, or whenever a queue drains to the mark)."""
        while self.blocking(queues()):
            with trio.move_on_after(self.stall_s):
                await self._room.wait()
