"""Fixes 20 and 21 (core/waku/libp2p_patches/locks.py). 20: py-libp2p's per-frame locks are trio locks, and trio's
Lock.acquire yields even when the lock is free; ours yield only when it is held. 21: stream events reach the
swarm's notifees inline instead of through a nursery and a task per notifee."""
import trio
import trio.testing
from libp2p.io.trio import TrioTCPStream
from libp2p.network.stream.net_stream import NetStream
from libp2p.stream_muxer.yamux.yamux import Yamux, YamuxStream

from core.waku.libp2p_patches.locks import UncontendedLock, UncontendedSemaphore


def test_fix20_upstream_trio_lock_yields_when_free():
    """Fails once trio takes a free lock without a scheduling point: then drop fix 20."""
    async def main():
        lock, sem = trio.Lock(), trio.Semaphore(1)
        with trio.testing.assert_checkpoints():
            async with lock:
                pass
        with trio.testing.assert_checkpoints():
            async with sem:
                pass
    trio.run(main)


def test_fix20_free_locks_do_not_yield_held_ones_still_exclude():
    async def main():
        lock, sem = UncontendedLock(), UncontendedSemaphore(1)
        with trio.testing.assert_no_checkpoints():
            async with lock:
                pass
            async with sem:
                pass
        for guard in (lock, sem):
            inside, order = [], []

            async def worker(name, guard=guard, inside=inside, order=order):
                async with guard:
                    inside.append(name)
                    assert len(inside) == 1          # never two holders at once
                    await trio.sleep(0)              # yield while holding it: the other task must wait
                    order.append(name)
                    inside.remove(name)
            async with trio.open_nursery() as n:
                for name in range(5):
                    n.start_soon(worker, name)
            assert sorted(order) == list(range(5))
        # a held lock makes another task wait, and that wait can be cancelled
        await lock.acquire()
        got = []

        async def waiter(task_status=trio.TASK_STATUS_IGNORED):
            with trio.CancelScope() as scope:
                task_status.started(scope)
                await lock.acquire()
                got.append("lock")
            got.append("cancelled" if scope.cancelled_caught else "done")
        async with trio.open_nursery() as n:
            scope = await n.start(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []                         # still waiting: the lock is held
            scope.cancel()
        assert got == ["cancelled"] and lock.locked()
        lock.release()
        assert not lock.locked() and sem.value == 1
    trio.run(main)


def test_fix20_py_libp2p_objects_get_the_uncontended_locks():
    for cls in (Yamux, YamuxStream, NetStream, TrioTCPStream):
        assert getattr(cls.__init__, "_waku_fix20", False), cls
    s = NetStream.__new__(NetStream)
    NetStream.__init__(s, muxed_stream=type("M", (), {"muxed_conn": None})(), swarm_conn=None,
                       metric_send_channel=None)
    assert isinstance(s._state_lock, UncontendedLock)


class _TaskRecorder:
    """A notifee that records which task each event runs in."""

    def __init__(self):
        self.tasks = {}

    async def opened_stream(self, network, stream):
        self.tasks["opened_stream"] = trio.lowlevel.current_task()

    async def connected(self, network, conn):
        self.tasks["connected"] = trio.lowlevel.current_task()


def _swarm_with(notifee):
    from libp2p import new_host
    from libp2p.crypto.secp256k1 import create_new_key_pair
    from core.waku.libp2p_patches.host import noise_only_security
    kp = create_new_key_pair()
    swarm = new_host(key_pair=kp, sec_opt=noise_only_security(kp)).get_network()
    swarm.notifees = [notifee]
    return swarm


def test_fix21_upstream_spawns_a_task_per_notifee_for_stream_events():
    """Fails once py-libp2p announces stream events without a task per notifee: then drop fix 21."""
    from core.waku.libp2p_patches.locks import _upstream_notify
    rec = _TaskRecorder()
    swarm = _swarm_with(rec)

    async def main():
        await _upstream_notify(swarm, "opened_stream", None)
        assert rec.tasks["opened_stream"] is not trio.lowlevel.current_task()
    trio.run(main)


def test_fix21_stream_events_run_inline_connection_events_as_upstream():
    from libp2p.network.swarm import Swarm
    from core.waku.libp2p_patches.locks import _notify
    assert Swarm._notify is _notify
    rec = _TaskRecorder()
    swarm = _swarm_with(rec)

    async def main():
        await swarm._notify("opened_stream", None)
        assert rec.tasks["opened_stream"] is trio.lowlevel.current_task()
        await swarm._notify("connected", None)
        assert rec.tasks["connected"] is not trio.lowlevel.current_task()
    trio.run(main)
