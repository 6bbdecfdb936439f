"""Fix 28 (core/waku/libp2p_patches/unread.py): a yamux stream's unread data stays readable when its connection ends;
fix 25 (readahead.py): the TCP read-ahead that needs it.

Real yamux (py-libp2p's Yamux, with our patches or upstream's functions) over an in-memory trio stream pair wrapped
in py-libp2p's TrioTCPStream: the test plays the other side and writes raw yamux frames, so what arrives together
(an answer and the GO_AWAY right behind it, in one TCP read) is exact."""
import struct

import pytest
import trio
import trio.testing
from libp2p.io.trio import TrioTCPStream
from libp2p.network.stream.exceptions import StreamReset
from libp2p.network.stream.net_stream import NetStream, StreamState
from libp2p.peer.id import ID
from libp2p.stream_muxer.exceptions import MuxedStreamEOF, MuxedStreamReset
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches import framing, readahead, unread

PEER = ID(b"\x00\x25" + bytes(37))
GONE = (MuxedStreamEOF, MuxedStreamReset)


def frame(typ: int, flags: int, sid: int, body: bytes = b"", length: int | None = None) -> bytes:
    return struct.pack(Y.YAMUX_HEADER_FORMAT, 0, typ, flags, sid, len(body) if length is None else length) + body


def data(body: bytes, *, ack=True, fin=False) -> bytes:
    """Data on our stream 1; the first frame carries the peer's ACK (upstream ignores a FIN on an ACK frame)."""
    return frame(Y.TYPE_DATA, (Y.FLAG_ACK if ack else 0) | (Y.FLAG_FIN if fin else 0), 1, body)


GO_AWAY = frame(Y.TYPE_GO_AWAY, 0, 0, length=Y.GO_AWAY_NORMAL)


class _Secured(TrioTCPStream):
    """TrioTCPStream as the secured connection (no Noise: the test writes yamux frames in the clear)."""
    is_initiator = True


async def _session(script):
    """Our Yamux (initiator) with one open stream; `script(yamux, stream, peer_side)` runs the exchange."""
    ours, theirs = trio.testing.memory_stream_pair()
    yamux = Y.Yamux(_Secured(ours), PEER, is_initiator=True)
    async with trio.open_nursery() as n:
        n.start_soon(yamux.start)
        await yamux.event_started.wait()
        stream = await yamux.open_stream()
        with trio.fail_after(10):
            result = await script(yamux, stream, theirs)
        n.cancel_scope.cancel()
    return result


async def _read_after_close(yamux, stream, theirs, frames: bytes, n: int | None):
    if frames:
        await theirs.send_all(frames)
    await yamux.event_closed.wait()                  # the connection has ended; nothing has read the stream yet
    got = []
    try:
        while True:
            got.append(await stream.read(n))
    except GONE as e:
        return b"".join(got), type(e)


def _upstream(monkeypatch):
    monkeypatch.setattr(Y.Yamux, "_cleanup_on_error", unread.UPSTREAM_CLEANUP)
    monkeypatch.setattr(Y.YamuxStream, "read", unread.UPSTREAM_STREAM_READ)
    monkeypatch.setattr(NetStream, "read", unread.UPSTREAM_NETSTREAM_READ)


def test_fix28_upstream_drops_unread_data_when_the_connection_ends(monkeypatch):
    """Fails once py-libp2p keeps a stream's unread data across the end of its connection: then drop fix 28."""
    _upstream(monkeypatch)
    for end in (GO_AWAY, b""):                      # a GO_AWAY frame, or the socket's EOF
        async def script(y, s, theirs):
            if not end:
                await theirs.send_all(data(b"answer"))
                await theirs.aclose()
                await y.event_closed.wait()
                return await _read_after_close(y, s, theirs, b"", 100)
            return await _read_after_close(y, s, theirs, data(b"answer") + end, 100)
        got, error = trio.run(_session, script)
        assert got == b"" and error is MuxedStreamReset

    async def waiting_reader(y, s, theirs):         # a reader already waiting: answer + GO_AWAY in one TCP read
        result = {}

        async def reader():
            try:
                result["got"] = await s.read(100)
            except GONE as e:
                result["error"] = type(e)
        async with trio.open_nursery() as n:
            n.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            await theirs.send_all(data(b"answer") + GO_AWAY)
        return result
    assert trio.run(_session, waiting_reader) == {"error": MuxedStreamEOF}


@pytest.mark.parametrize("n", [100, 2, -1, None])
def test_fix28_unread_data_is_read_then_reset_after_go_away(n):
    assert unread.installed()
    got, error = trio.run(_session, lambda y, s, t: _read_after_close(y, s, t, data(b"answer") + GO_AWAY, n))
    assert got == b"answer" and error is MuxedStreamReset


def test_fix28_a_stream_that_had_its_fin_ends_in_eof_after_its_data():
    got, error = trio.run(_session, lambda y, s, t: _read_after_close(
        y, s, t, data(b"ans") + data(b"wer", ack=False, fin=True) + GO_AWAY, 4))
    assert got == b"answer" and error is MuxedStreamEOF

    async def eof(y, s, theirs):                    # the socket's EOF instead of a GO_AWAY
        await theirs.send_all(data(b"answer") + data(b"", ack=False, fin=True))
        await theirs.aclose()
        return await _read_after_close(y, s, theirs, b"", 3)
    assert trio.run(_session, eof) == (b"answer", MuxedStreamEOF)


def test_fix28_a_waiting_reader_gets_the_answer_that_arrived_with_the_go_away():
    async def script(y, s, theirs):
        got = []

        async def reader():
            got.append(await s.read(3))             # wakes up after the connection has ended
            got.append(await s.read(100))
            with pytest.raises(MuxedStreamReset):
                await s.read(100)
        async with trio.open_nursery() as n:
            n.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            await theirs.send_all(data(b"answer") + GO_AWAY)
        await y.event_closed.wait()
        return got
    assert trio.run(_session, script) == [b"ans", b"wer"]


def test_fix28_data_read_in_part_before_the_end_is_not_repeated():
    async def script(y, s, theirs):
        await theirs.send_all(data(b"0123456789"))
        await trio.testing.wait_all_tasks_blocked()
        first = await s.read(4)
        rest = await _read_after_close(y, s, theirs, GO_AWAY, 4)
        return first, rest
    assert trio.run(_session, script) == (b"0123", (b"456789", MuxedStreamReset))


def test_fix28_netstream_reset_by_the_swarm_still_gives_the_kept_frame():
    """SwarmConn._cleanup resets every NetStream of an ended connection; the kept bytes are still served, and the
    length-prefixed reader (fix 22) finds the whole frame in the kept buffer (one read)."""
    async def script(y, s, theirs):
        await theirs.send_all(data(b"\x06answer") + GO_AWAY)
        await y.event_closed.wait()
        ns = NetStream(s, None, None)
        ns._state = StreamState.RESET
        assert framing.buffered(ns) == bytearray(b"\x06answer")
        frame_ = await framing.read_length_prefixed(ns, 100)
        with pytest.raises(StreamReset):
            await ns.read(1)
        return frame_
    assert trio.run(_session, script) == b"answer"


# --- fix 25: the read-ahead ---
def test_fix25_upstream_reads_the_socket_once_per_call():
    """Fails once py-libp2p's TrioTCPStream serves a second read from what it already received: drop fix 25."""
    async def main():
        ours, theirs = trio.testing.memory_stream_pair()
        tcp = TrioTCPStream(ours)
        await theirs.send_all(b"\x00\x05hello")
        assert await readahead.UPSTREAM_READ(tcp, 2) == b"\x00\x05"
        with trio.testing.assert_checkpoints():
            assert await readahead.UPSTREAM_READ(tcp, 5) == b"hello"
    trio.run(main)


def test_fix25_read_ahead_serves_received_bytes_without_a_scheduling_point():
    assert TrioTCPStream.read is readahead.read_ahead

    async def main():
        ours, theirs = trio.testing.memory_stream_pair()
        tcp = TrioTCPStream(ours)
        await theirs.send_all(b"\x00\x05hello" + b"x" * 70000)
        assert await tcp.read(2) == b"\x00\x05"
        with trio.testing.assert_no_checkpoints():
            assert await tcp.read(5) == b"hello"
            assert await tcp.read(0) == b""
        rest = b""
        while len(rest) < 70000:
            rest += await tcp.read(70000 - len(rest))
        assert rest == b"x" * 70000
        await theirs.send_all(b"abc")
        assert await tcp.read(None) == b"abc"
        await theirs.aclose()
        assert await tcp.read(10) == b""            # EOF
        await tcp.close()
        assert await tcp.read(10) == b""            # closed locally: EOF, as upstream
    trio.run(main)
