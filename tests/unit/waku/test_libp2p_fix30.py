"""Fixes 29 (core/waku/libp2p_patches/yamux.py), 30 and 31 (oneframe.py, fastpath.py): a request/response server
answers in one yamux frame, each frame one scheduling point; 32 (locks.py): opening a stream is no scheduling point
while the swarm's stream semaphore has tokens. Each fix has a canary (fails once py-libp2p changes)."""
import struct

import pytest
import trio
import trio.testing
from libp2p.network.stream.exceptions import StreamClosed
from libp2p.network.stream.net_stream import NetStream, StreamState
from libp2p.protocol_muxer.multiselect import Multiselect
from libp2p.protocol_muxer.multiselect_communicator import MultiselectCommunicator
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches import fastpath as fp
from core.waku.libp2p_patches import oneframe, yamux
from core.waku.libp2p_patches.locks import UncontendedLock
from tests.unit.waku.test_libp2p_fix22 import HEADER, FakeYamuxStream, _frame

LP = "/vac/waku/lightpush/3.0.0"


class _Steps(trio.abc.Instrument):
    """Counts the steps one task takes: each step after the first follows a scheduling point."""

    def __init__(self, task):
        self.task, self.n = task, 0

    def before_task_step(self, task):
        if task is self.task:
            self.n += 1


async def _yields(fn, *args) -> int:
    steps = _Steps(trio.lowlevel.current_task())
    trio.lowlevel.add_instrument(steps)
    try:
        await fn(*args)
    finally:
        trio.lowlevel.remove_instrument(steps)
    return steps.n


class _Conn:
    """A yamux connection as a stream sees it: frames recorded; each write yields once, as a socket send does."""

    def __init__(self):
        self._write_lock = UncontendedLock()      # fix 20's, as every yamux connection of ours: no yield when free
        self.is_initiator_value = False
        self.frames = []
        self.secured_conn = self
        self.finalized = []

    async def write(self, data):
        self.frames.append(data)
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def _write_frame(self, data):
        await yamux.lean_write_frame(self, data)

    async def _finalize_stream(self, stream, *, fully_closed):
        self.finalized.append((stream.stream_id, fully_closed))

    def rtt(self):
        return 0.0


def _header(frame: bytes) -> tuple:
    return struct.unpack(Y.YAMUX_HEADER_FORMAT, frame[:Y.HEADER_SIZE])


# --- fix 29 ---
def test_fix29_upstream_yields_again_after_the_send():
    """Fails once py-libp2p's _write_frame stops adding a checkpoint after the write: then drop fix 29."""
    async def main():
        assert await _yields(yamux.UPSTREAM_WRITE_FRAME, _Conn(), b"x" * 12) == 2
    trio.run(main)


def test_fix29_a_frame_is_one_scheduling_point():
    assert Y.Yamux._write_frame is yamux.lean_write_frame

    async def main():
        conn = _Conn()
        assert await _yields(yamux.lean_write_frame, conn, b"x" * 12) == 1     # the send's own
        assert conn.frames == [b"x" * 12]
    trio.run(main)


# --- fix 30 ---
def test_fix30_upstream_echoes_before_the_handler_runs():
    """Fails once py-libp2p's server keeps the echo of a pipelined request for the answer: then drop fix 30."""
    async def main():
        s = FakeYamuxStream(HEADER + _frame(LP.encode() + b"\n") + b"REQUEST")
        assert (await Multiselect({LP: "h"}).negotiate(MultiselectCommunicator(s)))[0] == LP
        assert s.writes[-1] == _frame(LP.encode() + b"\n")     # written although the request was already there
    trio.run(main)


def test_fix30_the_echo_of_a_pipelined_request_waits_for_the_answer():
    async def handler(stream):
        pass
    marked = oneframe.answers_in_one_frame(handler)

    async def main():
        s = FakeYamuxStream(HEADER + _frame(LP.encode() + b"\n") + b"REQUEST")
        assert await fp.negotiate_inbound(s, {LP: marked}, 5) == (LP, marked)
        assert s.writes == [] and oneframe.deferred(s)
        assert oneframe.take_deferred(s) == HEADER + _frame(LP.encode() + b"\n")
        assert oneframe.take_deferred(s) == b"" and not oneframe.deferred(s)       # once
        # nothing buffered behind the proposal: the client waits for the echo, which goes out at once
        s = FakeYamuxStream(HEADER + _frame(LP.encode() + b"\n"))
        await fp.negotiate_inbound(s, {LP: marked}, 5)
        assert s.writes == [HEADER + _frame(LP.encode() + b"\n")] and not oneframe.deferred(s)
        # a handler not marked (it may never write, e.g. a test's or another registration): at once, as before
        s = FakeYamuxStream(HEADER + _frame(LP.encode() + b"\n") + b"REQUEST")
        await fp.negotiate_inbound(s, {LP: handler}, 5)
        assert s.writes == [HEADER + _frame(LP.encode() + b"\n")] and not oneframe.deferred(s)
    trio.run(main)


# --- fix 31 ---
async def _open_stream(conn) -> NetStream:
    ns = NetStream(Y.YamuxStream(3, conn, False), None, None)
    await ns.set_state(StreamState.OPEN)
    return ns


def test_fix31_upstream_closes_with_a_frame_of_its_own():
    """Fails once py-libp2p sends an answer and the FIN in one frame: then drop fix 31."""
    async def main():
        conn = _Conn()
        ns = await _open_stream(conn)
        await ns.write(b"answer")
        await ns.close()
        assert [_header(f)[1:3] for f in conn.frames] == [(Y.TYPE_DATA, 0), (Y.TYPE_WINDOW_UPDATE, Y.FLAG_FIN)]
    trio.run(main)


def test_fix31_the_answer_carries_the_fin_and_a_deferred_echo():
    async def main():
        conn = _Conn()
        ns = await _open_stream(conn)
        oneframe.defer(ns, b"ECHO")
        assert await _yields(oneframe.write_and_close, ns, b"answer") == 1
        assert len(conn.frames) == 1
        assert _header(conn.frames[0]) == (0, Y.TYPE_DATA, Y.FLAG_FIN, 3, 10)
        assert conn.frames[0][Y.HEADER_SIZE:] == b"ECHOanswer"
        ms = ns.muxed_stream
        assert ms.send_closed and ms.send_window == Y.DEFAULT_WINDOW_SIZE - 10
        assert ns._state is StreamState.CLOSE_BOTH and conn.finalized == [(3, False)]
        # the peer had closed its side already: the stream is fully closed
        conn = _Conn()
        ns = await _open_stream(conn)
        ns.muxed_stream.recv_closed = True
        await oneframe.write_and_close(ns, b"x")
        assert ns.muxed_stream.closed and conn.finalized == [(3, True)]
    trio.run(main)


def test_fix31_what_does_not_fit_one_frame_is_written_and_closed_as_upstream():
    def kinds(conn):
        return [_header(f)[1:3] for f in conn.frames]

    async def main():
        # over yamux's frame limit: upstream's frames, then its FIN
        conn = _Conn()
        ns = await _open_stream(conn)
        data = b"y" * (Y.MAX_MESSAGE_SIZE + 10)
        await oneframe.write_and_close(ns, data)
        assert kinds(conn) == [(Y.TYPE_DATA, 0)] * 2 + [(Y.TYPE_WINDOW_UPDATE, Y.FLAG_FIN)]
        assert b"".join(f[Y.HEADER_SIZE:] for f in conn.frames[:-1]) == data
        assert ns._state is StreamState.CLOSE_BOTH
        # more than the peer's window: what fits, the rest once it grants more, then the FIN
        conn = _Conn()
        ns = await _open_stream(conn)
        ns.muxed_stream.send_window = 50
        async with trio.open_nursery() as n:
            n.start_soon(oneframe.write_and_close, ns, b"z" * 100)
            await trio.testing.wait_all_tasks_blocked()
            assert kinds(conn) == [(Y.TYPE_DATA, 0)]
            ns.muxed_stream.send_window += 1000
        assert kinds(conn) == [(Y.TYPE_DATA, 0)] * 2 + [(Y.TYPE_WINDOW_UPDATE, Y.FLAG_FIN)]
        # a stream closed already: as upstream's write
        conn = _Conn()
        ns = await _open_stream(conn)
        await ns.close()
        with pytest.raises(StreamClosed, match="closed for writing"):
            await oneframe.write_and_close(ns, b"late")
        assert kinds(conn) == [(Y.TYPE_WINDOW_UPDATE, Y.FLAG_FIN)]
    trio.run(main)


# --- fix 32 ---
def _swarm_semaphore():
    from libp2p import new_host
    from libp2p.crypto.secp256k1 import create_new_key_pair
    return new_host(key_pair=create_new_key_pair()).get_network()


def test_fix32_upstream_stream_semaphore_yields_when_free():
    """Fails once py-libp2p's stream semaphore is taken without a scheduling point when free: then drop fix 32."""
    swarm = _swarm_semaphore()
    assert isinstance(swarm._stream_semaphore, trio.Semaphore)

    async def main():
        with trio.testing.assert_checkpoints():
            await swarm._stream_semaphore.acquire()
    trio.run(main)


def test_fix32_a_free_token_is_taken_at_once_and_the_limit_holds():
    from core.waku.libp2p_patches.locks import install_uncontended_stream_semaphore
    swarm = _swarm_semaphore()
    tokens = swarm._stream_semaphore.value
    install_uncontended_stream_semaphore(swarm)
    install_uncontended_stream_semaphore(swarm)          # idempotent
    sem = swarm._stream_semaphore
    assert not isinstance(sem, trio.Semaphore) and sem.value == tokens

    async def main():
        with trio.testing.assert_no_checkpoints():
            await sem.acquire()
        sem.release()
        for _ in range(tokens):
            sem.acquire_nowait()
        got = []
        async with trio.open_nursery() as n:
            async def waiter():
                await sem.acquire()                       # no token left: it waits until one is released
                got.append(True)
            n.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            sem.release()
        assert got == [True] and sem.value == 0
    trio.run(main)
