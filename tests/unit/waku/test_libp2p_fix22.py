"""Fix 22 (core/waku/libp2p_patches/framing.py), 23, 24 and 26 (fastpath.py), the relay send watchdog's reasons
(sendq.py) and the store's deferred checkpoints. Each fix has a test that it works and one that the upstream cost is still there (it fails
once py-libp2p changes: then look again whether the fix is still needed)."""
import inspect
import time

import pytest
import trio.testing
import trio
from libp2p.exceptions import ParseError
from libp2p.io.exceptions import IncompleteReadError, MessageTooLarge
from libp2p.protocol_muxer.exceptions import MultiselectError
from libp2p.protocol_muxer.multiselect import Multiselect
from libp2p.protocol_muxer.multiselect_communicator import MultiselectCommunicator
from libp2p.pubsub import pubsub as pubsub_module
from libp2p.pubsub.gossipsub import GossipSub
from libp2p.pubsub.rpc_queue import RpcQueue

from core.varint import DecodeError, write_varint
from core.waku.libp2p_patches import fastpath as fp
from core.waku.libp2p_patches import framing
from core.waku.libp2p_patches.framing import FrameTooLarge, read_length_prefixed
from core.waku.libp2p_patches.gossipsub import WakuGossipSub
from core.waku.libp2p_patches.sendq import QueueWatch
from core.waku.message import WakuMessage
from core.waku.store_db import MessageStore


class FakeYamuxStream:
    """What read_prefixed and negotiate_inbound see of a NetStream over yamux: a receive buffer that fills as
    frames arrive (`arrive`), read(n) that takes up to n buffered bytes or waits, write() recorded."""

    def __init__(self, data: bytes = b""):
        self.muxed_stream = self
        self.conn, self.stream_id = self, 7
        self.stream_buffers = {7: bytearray(data)}
        self.reads, self.writes = 0, []
        self._more = trio.Event()
        self.eof = False

    def arrive(self, data: bytes) -> None:
        self.stream_buffers[7] += data
        self._more.set()
        self._more = trio.Event()

    async def read(self, n: int = -1) -> bytes:
        self.reads += 1
        buf = self.stream_buffers[7]
        while not buf and not self.eof:
            await self._more.wait()
        take = len(buf) if n is None or n < 0 else min(n, len(buf))
        out = bytes(buf[:take])
        del buf[:take]
        return out

    async def write(self, data: bytes) -> None:
        self.writes.append(data)


def _frame(body: bytes) -> bytes:
    return write_varint(len(body)) + body


# --- fix 22: one read per buffered frame ---
def test_fix22_a_buffered_frame_is_one_read_and_partial_arrivals_still_work():
    async def main():
        s = FakeYamuxStream(_frame(b"x" * 300) + _frame(b"next"))
        assert await read_length_prefixed(s, 1000) == b"x" * 300 and s.reads == 1
        assert await read_length_prefixed(s, 1000) == b"next" and s.reads == 2
        # a frame that arrives a byte at a time, while the reader waits
        s = FakeYamuxStream()
        data = _frame(b"y" * 200)
        async with trio.open_nursery() as n:
            async def feed():
                for b in data:
                    await trio.testing.wait_all_tasks_blocked()
                    s.arrive(bytes([b]))
            n.start_soon(feed)
            assert await read_length_prefixed(s, 1000) == b"y" * 200
        # oversize: the prefix is consumed, the body is left for the caller to drain
        s = FakeYamuxStream(_frame(b"z" * 50))
        with pytest.raises(FrameTooLarge) as e:
            await read_length_prefixed(s, 10)
        assert e.value.size == 50 and bytes(s.stream_buffers[7]) == b"z" * 50
        # pubsub's exceptions for pubsub's reader
        with pytest.raises(MessageTooLarge):
            await framing.read_rpc(FakeYamuxStream(_frame(b"z" * 50)), 10)
        closed = FakeYamuxStream(_frame(b"abc")[:-1])
        closed.eof = True
        with pytest.raises(IncompleteReadError):
            await framing.read_rpc(closed, 10)
        with pytest.raises(ParseError):
            await framing.read_rpc(FakeYamuxStream(b"\xff" * 11), 10)
        with pytest.raises(DecodeError):
            await read_length_prefixed(FakeYamuxStream(b"\xff" * 11), 10)
    trio.run(main)
    assert pubsub_module.read_varint_prefixed_bytes_limited is framing.read_rpc


def test_fix22_upstream_reads_a_buffered_frame_byte_by_byte():
    """Fails once py-libp2p reads a buffered frame in one call: then drop fix 22."""
    async def main():
        s = FakeYamuxStream(_frame(b"x" * 300))
        assert await framing.UPSTREAM_READ_RPC(s, 1000) == b"x" * 300
        assert s.reads >= 3      # two prefix bytes one at a time, then the body
    trio.run(main)


# --- fix 23: server side of multistream-select ---
HEADER = _frame(fp.MULTISTREAM)


def test_fix23_pipelined_client_gets_one_answer_a_waiting_client_gets_the_header_first():
    handlers = {"/vac/waku/lightpush/3.0.0": "handler"}

    async def main():
        s = FakeYamuxStream(HEADER + _frame(b"/unknown/1\n") + _frame(b"/vac/waku/lightpush/3.0.0\n") + b"REQ")
        proto, handler = await fp.negotiate_inbound(s, handlers, 5)
        assert (proto, handler) == ("/vac/waku/lightpush/3.0.0", "handler")
        assert s.writes == [HEADER + _frame(fp.NA), _frame(b"/vac/waku/lightpush/3.0.0\n")]
        assert bytes(s.stream_buffers[7]) == b"REQ"         # the request is left for the handler
        # a client that sends its header and waits for ours before proposing (py-libp2p's own client)
        s = FakeYamuxStream(HEADER)
        async with trio.open_nursery() as n:
            async def client():
                await trio.testing.wait_all_tasks_blocked()
                assert s.writes == [HEADER]                 # our header came before we wait for its protocol
                s.arrive(_frame(b"/vac/waku/lightpush/3.0.0\n"))
            n.start_soon(client)
            assert (await fp.negotiate_inbound(s, handlers, 5))[0] == "/vac/waku/lightpush/3.0.0"
        assert s.writes == [HEADER, _frame(b"/vac/waku/lightpush/3.0.0\n")]
        with pytest.raises(MultiselectError):
            await fp.negotiate_inbound(FakeYamuxStream(_frame(b"/other/1.0\n")), handlers, 5)
        with pytest.raises(MultiselectError):             # silent client: the deadline
            await fp.negotiate_inbound(FakeYamuxStream(), handlers, 0.05)
    trio.run(main)


def test_fix23_upstream_answers_a_pipelined_client_in_two_writes():
    """Fails once py-libp2p's server answers header and protocol in one write: then drop fix 23."""
    async def main():
        s = FakeYamuxStream(HEADER + _frame(b"/p/1\n"))
        ms = Multiselect({"/p/1": "h"})
        assert (await ms.negotiate(MultiselectCommunicator(s)))[0] == "/p/1"
        assert len(s.writes) == 2
    trio.run(main)


# --- fix 24: one worker for relayed messages ---
class _Pubsub:
    def __init__(self):
        self.got = []

    async def push_msg(self, forwarder, msg):
        self.got.append((forwarder, msg))
        await trio.sleep(0)


class _Manager:
    def __init__(self, nursery):
        self.nursery, self.spawned = nursery, []

    def run_task(self, fn, *args, **kw):
        self.spawned.append(fn)
        self.nursery.start_soon(fn, *args)

    def run_daemon_task(self, fn, *args):
        self.nursery.start_soon(fn, *args)


def test_fix24_relayed_messages_go_to_one_worker_in_order_other_tasks_as_upstream():
    async def main():
        ps = _Pubsub()
        async with trio.open_nursery() as n:
            mgr = fp.InlinePushManager(_Manager(n), ps, limit=50)
            for i in range(60):
                mgr.run_task(ps.push_msg, "peer", i)
            other = []

            async def task():
                other.append(1)
            mgr.run_task(task)
            await trio.testing.wait_all_tasks_blocked()
            assert [m for _, m in ps.got] == list(range(50)) and mgr.dropped == 10 and other == [1]
            assert mgr._manager.spawned == [task]           # no task per message
            n.cancel_scope.cancel()
    trio.run(main)


def test_fix24_upstream_spawns_a_task_per_relayed_message():
    """Fails once py-libp2p stops spawning push_msg per message: then drop fix 24."""
    assert "run_task(self.push_msg" in inspect.getsource(pubsub_module.Pubsub.continuously_read_stream)


# --- fix 26: the optimistic queue walks recently identified peers only ---
def test_fix26_only_recently_identified_peers_are_walked():
    now = [1000.0]
    router = WakuGossipSub(clock=lambda: now[0])
    router._recent = {"a": 1000.0, "b": 990.0}
    router._pending_messages["b"].append((time.time(), "rpc"))   # b was identified 10 s ago: settled
    assert router.recently_identified() == ["a"] and "b" not in router._pending_messages
    assert WakuGossipSub.publish is fp.gossip_publish


def test_fix26_upstream_publish_walks_every_connected_peer():
    """Fails once py-libp2p stops walking every peer per published message: then drop fix 26."""
    assert "for peer_id in pubsub.peers:" in inspect.getsource(GossipSub.publish)


# --- the relay send watchdog's reasons (sendq.py) ---
def test_send_watch_reasons_a_queue_that_stops_moving_or_stays_full():
    now = [0.0]
    watch = QueueWatch(disconnect_s=10, clock=lambda: now[0])
    q = RpcQueue(4)
    watch.watch(q)
    q.push("rpc")
    now[0] = 9.0
    assert watch.stuck_reason(q) is None
    now[0] = 10.5
    assert "has not moved for 10.5 s (1 RPCs waiting)" in watch.stuck_reason(q)

    async def main():   # a peer that reads, slowly: the queue moves but stays full and drops
        q2 = RpcQueue(4)
        watch.watch(q2)
        now[0] = 100.0
        for t in range(30):
            now[0] = 100.0 + t
            while q2.push(f"rpc{t}"):
                pass
            assert q2.full_since == 100.0
            await q2.pop()                                 # one read per second: it moves
            if t < 10:
                assert watch.stuck_reason(q2) is None
        assert "full for" in watch.stuck_reason(q2)
        assert QueueWatch.release(q2) == 3 and len(q2) == 0 and q2.closed
        assert watch.stuck_reason(q2) is None
    trio.run(main)


# --- the store's checkpoints, off the loop ---
def test_store_checkpoints_when_asked_once_deferred(tmp_path):
    store = MessageStore(tmp_path / "s.db")
    store.defer_checkpoints()
    ps = "/waku/2/rs/16/32"
    now = time.time_ns()
    store.add_many([(ps, WakuMessage(b"x" * 1000, "/a/1/b/c", timestamp=now + i)) for i in range(3000)])
    wal = tmp_path / "s.db-wal"
    assert wal.stat().st_size > 4 * 1024 * 1024                # past the 1,000 pages an autocheckpoint allows
    frames, copied = store.checkpoint()
    assert frames > 1000 and copied == frames
    assert MessageStore(":memory:").checkpoint() == (0, 0)
    store.close()
