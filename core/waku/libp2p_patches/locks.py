"""Fixes 20 and 21 (registry: __init__.py): scheduling work py-libp2p does per frame and per stream for
nothing.

Fix 20: locks that are not a scheduling point when nobody holds them.

py-libp2p 0.8.1 guards its per-frame and per-read bookkeeping with trio locks: yamux (stream_muxer/yamux/yamux.py:
`Yamux.streams_lock`, `_write_lock`; `YamuxStream.window_lock`, `close_lock`, and the semaphore inside
`rw_lock`), the stream's state (network/stream/net_stream.py `NetStream._state_lock`, twice per read or write)
and the TCP stream (io/trio.py `TrioTCPStream.read_lock`, `write_lock`). trio's `Lock.acquire` yields to the
scheduler even when the lock is free (`cancel_shielded_checkpoint`), so every acquisition puts the task at the
back of the run queue and resumes its whole coroutine stack later. A lightpush request took ~75 of them in the
node; under a flood, with ~100 runnable tasks, each one is a wait behind all the others.

`UncontendedLock` and `UncontendedSemaphore` take a free lock at once, without yielding, and wait (through trio's
own lock, so fairly and cancellably) only when it is held. Mutual exclusion is unchanged; the I/O underneath
(socket sends and receives, `Yamux._write_frame`'s explicit checkpoint) still yields and still sees
cancellation.

Fix 21: every stream opened or closed is announced to the swarm's notifees (network/swarm.py Swarm._notify) in a
fresh nursery with one task per notifee: 2 nurseries and 8 tasks per request stream on each side, and every
notifee a Waku node has (the tag store's, identify's, pubsub's, ours) ignores stream events. Stream events now
call the notifees one after another in the caller's task (errors logged as upstream does); connection events
are unchanged.
"""
from __future__ import annotations

import logging

import trio
from libp2p.io.trio import TrioTCPStream
from libp2p.network.swarm import Swarm
from libp2p.network.stream.net_stream import NetStream
from libp2p.stream_muxer.yamux.yamux import Yamux, YamuxStream

log = logging.getLogger(__name__)


class UncontendedLock:
    """The trio.Lock interface py-libp2p uses; no scheduling point on an uncontended acquire. A flag and a
    ParkingLot rather than a wrapped trio.Lock: trio's own bookkeeping (owner task, parking-lot breakers) was
    ~0.8 of every 6 s of the node's CPU under a lightpush flood, at ~60 acquisitions per request. A waiter parks;
    release hands the lock straight to the first one (FIFO, as trio.Lock), so a task cannot barge in between."""

    __slots__ = ("_held", "_lot")

    def __init__(self) -> None:
        self._held = False
        self._lot = trio.lowlevel.ParkingLot()

    async def acquire(self) -> None:
        if not self._held:
            self._held = True
            return
        await self._lot.park()          # cancellable; once unparked we own the lock (release kept it held)

    def acquire_nowait(self) -> None:
        if self._held:
            raise trio.WouldBlock
        self._held = True

    def release(self) -> None:
        if not self._held:
            raise RuntimeError("release of a lock that is not held")
        if self._lot:
            self._lot.unpark()          # hand-off: it stays held, by the woken task
        else:
            self._held = False

    def locked(self) -> bool:
        return self._held

    def statistics(self) -> trio.LockStatistics:
        return trio.LockStatistics(locked=self._held, owner=None, tasks_waiting=len(self._lot))

    async def __aenter__(self) -> None:
        if not self._held:
            self._held = True
            return
        await self._lot.park()

    async def __aexit__(self, *exc) -> None:
        self.release()


class UncontendedSemaphore:
    """The trio.Semaphore interface ReadWriteLock uses; no scheduling point when a token is free (a counter and a
    ParkingLot, tokens handed straight to waiters, as UncontendedLock)."""

    __slots__ = ("_value", "_lot")

    def __init__(self, value: int) -> None:
        self._value = value
        self._lot = trio.lowlevel.ParkingLot()

    async def acquire(self) -> None:
        if self._value > 0:
            self._value -= 1
            return
        await self._lot.park()

    def acquire_nowait(self) -> None:
        if self._value <= 0:
            raise trio.WouldBlock
        self._value -= 1

    def release(self) -> None:
        if self._lot:
            self._lot.unpark()
        else:
            self._value += 1

    @property
    def value(self) -> int:
        return self._value

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc) -> None:
        self.release()


def _yamux_stream_locks(s: YamuxStream) -> None:
    s.window_lock, s.close_lock = UncontendedLock(), UncontendedLock()
    s.rw_lock._readers_lock = UncontendedLock()
    s.rw_lock._writer_lock = UncontendedSemaphore(1)


_LOCKS = {
    Yamux: lambda m: (setattr(m, "streams_lock", UncontendedLock()), setattr(m, "_write_lock", UncontendedLock())),
    YamuxStream: _yamux_stream_locks,
    NetStream: lambda s: setattr(s, "_state_lock", UncontendedLock()),
    TrioTCPStream: lambda s: (setattr(s, "read_lock", UncontendedLock()), setattr(s, "write_lock", UncontendedLock())),
}


def install_uncontended_locks() -> None:
    """Every instance of the classes above gets our locks right after py-libp2p's __init__ made its own."""
    for cls, swap in _LOCKS.items():
        if getattr(cls.__init__, "_waku_fix20", False):
            continue
        upstream_init = cls.__init__

        def __init__(self, *args, _init=upstream_init, _swap=swap, **kwargs):
            _init(self, *args, **kwargs)
            _swap(self)
        __init__._waku_fix20 = True
        cls.__init__ = __init__


_upstream_notify = Swarm._notify
STREAM_EVENTS = ("opened_stream", "closed_stream")


async def _notify(self: Swarm, method: str, *args) -> None:
    """fix 21: stream events inline, in the caller's task; the rest as upstream (a nursery, a task per notifee)."""
    if method not in STREAM_EVENTS:
        await _upstream_notify(self, method, *args)
        return
    for notifee in list(self.notifees):
        try:
            await getattr(notifee, method)(self, *args)
        except Exception:  # noqa: BLE001 - as upstream: one notifee's error must not reach the stream
            log.exception("Notifee %s.%s raised", type(notifee).__name__, method)


def install_inline_stream_notifications() -> None:
    Swarm._notify = _notify


def install_uncontended_stream_semaphore(swarm) -> None:
    """fix 32 for one swarm: its stream semaphore (network/swarm.py Swarm.set_resource_manager: a trio.Semaphore of
    the resource manager's max_streams, taken for every stream opened, inbound in SwarmConn._handle_muxed_stream
    and outbound in Swarm.new_stream) yields even when a token is free: one more wait for a whole pass of the
    loop per request, on both sides. Swapped for an UncontendedSemaphore holding the same free tokens."""
    sem = getattr(swarm, "_stream_semaphore", None)
    if isinstance(sem, trio.Semaphore):
        swarm._stream_semaphore = UncontendedSemaphore(sem.value)
