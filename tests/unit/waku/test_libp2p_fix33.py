"""Fix 35 (peerids.py, at the end): the resource manager parses a peer ID once per peer, not per stream.
Fixes 33 and 34 (core/waku/libp2p_patches/yamux.py): a new stream's ACK (33) and, for an opener that writes at
once, its SYN (34) go out in front of the stream's first frame, in the same write (one Noise message), instead of
alone; an ACK waits for that frame ACK_DEADLINE_S at most, then goes alone. Real py-libp2p Yamux over an in-memory
trio stream pair; the test plays the other side with raw frames and records every write of the secured connection
(each would be one Noise message and one socket send). The deadline tests run on trio's MockClock (virtual time:
it moves only when every task waits), so they are exact and never depend on the machine's load."""
import struct

import trio
import trio.testing
from libp2p.io.trio import TrioTCPStream
from libp2p.peer.id import ID
from libp2p.rcmgr import ResourceLimits, ResourceManager, new_resource_manager
from libp2p.rcmgr.manager import Direction
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches import peerids, yamux

PEER = ID(b"\x00\x25" + bytes(37))


def frame(typ: int, flags: int, sid: int, body: bytes = b"", length: int | None = None) -> bytes:
    return struct.pack(Y.YAMUX_HEADER_FORMAT, 0, typ, flags, sid, len(body) if length is None else length) + body


class _Recorded(TrioTCPStream):
    """The secured connection in the clear; every write recorded (and, in `times`, its trio clock time)."""

    def __init__(self, stream, writes: list, initiator: bool):
        super().__init__(stream)
        self.writes, self.is_initiator, self.times = writes, initiator, []

    async def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.times.append(trio.current_time())
        await super().write(data)


async def _session(script, initiator: bool):
    """Our Yamux over a memory stream pair; `script(yamux, peer_side, writes)` runs the exchange (a quick one:
    tests whose stream writes at once run with an ACK deadline far beyond them, `_patient`)."""
    ours, theirs = trio.testing.memory_stream_pair()
    writes: list = []
    mux = Y.Yamux(_Recorded(ours, writes, initiator), PEER, is_initiator=initiator)
    async with trio.open_nursery() as n:
        n.start_soon(mux.start)
        await mux.event_started.wait()
        with trio.fail_after(10):
            result = await script(mux, theirs, writes)
        n.cancel_scope.cancel()
    return result


async def _accepted(mux, theirs, sid: int = 1):
    """The peer opens stream `sid` (a lone SYN, as py-libp2p and go-yamux send it); we accept it."""
    await theirs.send_all(frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_SYN, sid, length=0))
    return await mux.accept_stream()


def _ack(sid: int = 1) -> bytes:
    return frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_ACK, sid, length=0)


def _syn(sid: int) -> bytes:
    return frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_SYN, sid, length=0)


# --- fix 33: the ACK ---
def test_fix33_upstream_sends_the_ack_alone(monkeypatch):
    """Fails once py-libp2p sends a stream's ACK with its first frame: then drop fix 33."""
    monkeypatch.setattr(Y.Yamux, "_write_frame", yamux.UPSTREAM_WRITE_FRAME)

    async def script(mux, theirs, writes):
        stream = await _accepted(mux, theirs)
        await stream.write(b"answer")
        return writes
    writes = trio.run(_session, script, False)
    assert writes[0] == _ack() and writes[1].startswith(frame(Y.TYPE_DATA, 0, 1, b"answer"))


def _patient(monkeypatch) -> None:
    """An ACK deadline no exchange of these tests reaches, whatever the machine's load."""
    monkeypatch.setattr(yamux, "ACK_HOLD_S", 60.0)


def test_fix33_the_ack_travels_with_the_first_frame(monkeypatch):
    _patient(monkeypatch)

    async def script(mux, theirs, writes):
        stream = await _accepted(mux, theirs)
        assert writes == [] and yamux.held(stream) == _ack()
        await stream.write(b"answer")
        return writes
    assert trio.run(_session, script, False) == [_ack() + frame(Y.TYPE_DATA, 0, 1, b"answer")]


def test_fix33_a_reset_or_close_carries_the_held_ack_and_each_stream_keeps_its_own(monkeypatch):
    _patient(monkeypatch)

    async def script(mux, theirs, writes):
        one = await _accepted(mux, theirs, 1)
        three = await _accepted(mux, theirs, 3)
        await three.close()                                     # FIN: a window update with FIN
        await one.reset()
        return writes
    writes = trio.run(_session, script, False)
    assert writes == [_ack(3) + frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_FIN, 3, length=0),
                      _ack(1) + frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_RST, 1, length=0)]


def test_fix33_off_sends_the_ack_alone(monkeypatch):
    monkeypatch.setattr(yamux, "HOLD", False)           # the benchmarks' ARCHIVIST_WAKU_SEPARATE_SYN_ACK=1 wins

    async def script(mux, theirs, writes):
        stream = await _accepted(mux, theirs)
        await stream.write(b"x")
        return writes
    assert trio.run(_session, script, False)[0] == _ack()


def test_fix33_is_on_by_default_with_a_deadline_far_inside_go_yamux_stream_open_timeout():
    assert yamux.HOLD_ACK is True and 0.002 <= yamux.ACK_HOLD_S < yamux.ACK_DEADLINE_S <= 0.05   # go-yamux: 75 s


def _virtual(script, initiator: bool = False):
    return trio.run(_session, script, initiator, clock=trio.testing.MockClock(autojump_threshold=0))


def test_fix33_a_stream_never_written_on_is_acked_alone_by_its_deadline():
    """A stream we accept and only read (a peer's gossipsub stream) gets its ACK alone once ACK_HOLD_S has passed,
    never later than ACK_DEADLINE_S: go-yamux closes the whole session after its StreamOpenTimeout without it."""
    async def script(mux, theirs, writes):
        stream = await _accepted(mux, theirs)
        t0 = trio.current_time()
        await trio.sleep(yamux.ACK_HOLD_S * 0.99)
        assert writes == [] and yamux.held(stream) == _ack()
        await trio.sleep(yamux.ACK_DEADLINE_S)
        assert yamux.held(stream) == b""
        return writes, mux.secured_conn.times[0] - t0
    writes, after = _virtual(script)
    assert writes == [_ack()] and yamux.ACK_HOLD_S - 1e-9 <= after <= yamux.ACK_DEADLINE_S + 1e-9


def test_fix33_each_stream_acked_by_its_own_deadline_and_a_written_stream_not_twice():
    hold = yamux.ACK_HOLD_S

    async def script(mux, theirs, writes):
        accepted = {}
        for sid, gap in ((1, hold / 2), (3, hold / 3), (5, 0), (7, hold / 4)):
            accepted[sid] = (await _accepted(mux, theirs, sid), trio.current_time())
            await trio.sleep(gap)
        await accepted[5][0].write(b"quick")            # within its hold (H/4 after): its ACK rides with it
        await trio.sleep(yamux.ACK_DEADLINE_S * 2)
        times = mux.secured_conn.times
        return writes, {sid: [t - at for w, t in zip(writes, times) if w.startswith(_ack(sid))]
                        for sid, (_, at) in accepted.items()}, _TIMER_QUEUE()
    writes, waited, left = _virtual(script)
    assert sorted(writes) == sorted([_ack(1), _ack(3), _ack(5) + frame(Y.TYPE_DATA, 0, 5, b"quick"), _ack(7)])
    eps = 1e-9                                          # virtual times are floats: sums round
    assert all(hold - eps <= waited[sid][0] <= yamux.ACK_DEADLINE_S + eps for sid in (1, 3, 7)) and waited[5][0] < hold
    assert left == 0


def _TIMER_QUEUE() -> int:
    """ACKs still queued for the run's one flusher (every connection's)."""
    return len(yamux._TIMER.get().queue)


def test_fix33_a_held_ack_of_a_stream_reset_by_the_peer_is_dropped():
    async def script(mux, theirs, writes):
        stream = await _accepted(mux, theirs)
        await theirs.send_all(frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_RST, 1, length=0))
        await trio.sleep(yamux.ACK_DEADLINE_S * 2)
        return writes, stream.reset_received
    assert _virtual(script) == ([], True)


# --- fix 34: the SYN ---
def test_fix34_upstream_sends_the_syn_alone(monkeypatch):
    """Fails once py-libp2p's open_stream sends the SYN with the stream's first frame: then drop fix 34."""
    monkeypatch.setattr(Y.Yamux, "_write_frame", yamux.UPSTREAM_WRITE_FRAME)

    async def script(mux, theirs, writes):
        stream = await mux.open_stream()
        await stream.write(b"request")
        return writes
    writes = trio.run(_session, script, True)
    assert writes[0] == _syn(1) and writes[1].startswith(frame(Y.TYPE_DATA, 0, 1, b"request"))


def test_fix34_a_held_syn_travels_with_the_first_write_and_only_for_the_holding_task():
    async def script(mux, theirs, writes):
        others = []

        async def other_opener():                   # another task opening a stream meanwhile: its SYN goes at once
            others.append(await mux.open_stream())
        with yamux.hold_syn():
            stream = await mux.open_stream()
            async with trio.open_nursery() as n:
                n.start_soon(other_opener)
        assert writes == [_syn(3)] and yamux.held(stream) == _syn(1)
        await stream.write(b"request")
        later = await mux.open_stream()             # outside the block: alone again
        return writes, later.stream_id
    writes, later = trio.run(_session, script, True)
    assert writes == [_syn(3), _syn(1) + frame(Y.TYPE_DATA, 0, 1, b"request"), _syn(later)]


def test_fix34_a_stream_reset_before_its_first_write_sends_syn_then_rst():
    async def script(mux, theirs, writes):
        with yamux.hold_syn():
            stream = await mux.open_stream()
        await stream.reset()
        return writes
    assert trio.run(_session, script, True) == [_syn(1) + frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_RST, 1, length=0)]


# --- fix 35: the resource manager's peer ID parse ---
def _counting_parses(monkeypatch) -> list:
    from libp2p.peer import id as id_module
    calls, upstream = [], id_module.ID.from_string.__func__

    def counting(cls, s):
        calls.append(s)
        return upstream(cls, s)
    monkeypatch.setattr(id_module.ID, "from_string", classmethod(counting))
    peerids.parsed.cache_clear()
    return calls


def _peer_id_str() -> str:
    from libp2p.crypto.secp256k1 import create_new_key_pair
    return ID.from_pubkey(create_new_key_pair().public_key).to_base58()


def test_fix35_upstream_parses_the_peer_id_per_stream(monkeypatch):
    """Fails once py-libp2p's acquire_stream stops parsing the peer ID string on every call: then drop fix 35."""
    calls, pid = _counting_parses(monkeypatch), _peer_id_str()
    rm = new_resource_manager()
    for _ in range(3):
        assert peerids.UPSTREAM_ACQUIRE_STREAM(rm, pid, Direction.INBOUND)
    assert calls == [pid] * 3


def test_fix35_one_parse_per_peer_and_the_allowlist_and_limit_still_apply(monkeypatch):
    assert ResourceManager.acquire_stream is peerids.acquire_stream
    calls, pid, other = _counting_parses(monkeypatch), _peer_id_str(), _peer_id_str()
    rm = new_resource_manager(limits=ResourceLimits(max_streams=2))
    rm.allowlist.add_peer(ID.from_base58(other))
    assert rm.acquire_stream(pid, Direction.INBOUND) and rm.acquire_stream(pid, Direction.INBOUND)
    assert not rm.acquire_stream(pid, Direction.INBOUND)               # the limit holds
    assert rm.acquire_stream(other, Direction.INBOUND)                  # an allowlisted peer passes it, as upstream
    assert not rm.acquire_stream("not a peer id", Direction.INBOUND)    # does not parse: not allowlisted
    assert calls.count(pid) == 1 and calls.count(other) == 1
