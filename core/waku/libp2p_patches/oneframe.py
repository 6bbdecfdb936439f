"""Fixes 30 and 31 (registry: __init__.py): a request/response server answers in one yamux frame.

Under a flood every frame a request handler writes costs a socket send, and every send is a scheduling point: the
handler then waits for one whole pass of the node's run loop (every other runnable task runs one step first), and
during a relay flood a pass takes several ms (docs/BENCHMARKS.md, "Waku load": store p95 63-86 ms was mostly
these waits). py-libp2p 0.8.1 makes a server write three frames after the stream's ACK: the multistream-select
echo, the answer, and the FIN.

30. The echo (fastpath.negotiate_inbound, fix 23) goes out alone, before the handler has read the request. For a
    protocol answered by `edge_streams.serve_exchange` whose client pipelined its request behind its proposal
    (ours since fix 19, go-libp2p and js-libp2p's lazy select), `negotiate_inbound` keeps the echo on the stream
    (`defer`) and the answer's write sends it first (`take_deferred`), in the same frame. Handlers are marked
    with `answers_in_one_frame` where the node registers them. A client that waits for
    the echo before it sends its request finds nothing buffered, and gets the echo at once as before.
31. The answer and the FIN are two frames (YamuxStream.write, then YamuxStream.close's WINDOW_UPDATE with FIN).
    `write_and_close` sends the answer in a DATA frame that carries FIN (yamux allows FIN on any frame; py-libp2p,
    go-yamux and js-yamux all read it) and then does NetStream.close's bookkeeping. Anything that does not fit one
    frame (the send window or yamux's 64 KiB frame limit; mplex) is written and closed as upstream.
    Ours too, on the client side (not a py-libp2p fix): `write_and_close_write` sends a request in a DATA frame that
    carries FIN and keeps the stream readable for the answer (a half-close, as js-waku's lightpush client does
    when its request ends): `streams.open_stream(close_write=True)`, used by our lightpush client, so the node
    reads the request and the client's FIN in one frame, and the client's close after the answer is no frame at
    all (it was a frame, a Noise message and a socket send per request on each side).
"""
from __future__ import annotations

import struct

from libp2p.network.stream.net_stream import StreamState
from libp2p.stream_muxer.yamux.yamux import FLAG_FIN, HEADER_SIZE, MAX_MESSAGE_SIZE, TYPE_DATA, \
    YAMUX_HEADER_FORMAT, YamuxStream


# --- fix 30: the echo travels with the answer ---
def answers_in_one_frame(handler):
    """Mark a stream handler that answers through edge_streams.serve_exchange (which sends a deferred echo first):
    negotiate_inbound may keep the echo for it. Only marked handlers are trusted with it: another handler for the
    same protocol (a test's, a later registration) gets the echo at once."""
    async def marked(stream):
        await handler(stream)
    marked.answers_in_one_frame = True
    return marked


def wants_deferred_echo(handler) -> bool:
    return getattr(handler, "answers_in_one_frame", False)


def defer(stream, echo: bytes) -> None:
    """Keep the multistream-select `echo` on `stream` for its first answer (negotiate_inbound)."""
    stream._waku_echo = echo


def take_deferred(stream) -> bytes:
    """The echo kept on `stream`, once (b"" if none): whoever writes first sends it in front."""
    return stream.__dict__.pop("_waku_echo", b"") if hasattr(stream, "__dict__") else b""


def deferred(stream) -> bool:
    return bool(getattr(stream, "_waku_echo", b""))


# --- fix 31: the answer carries the FIN ---
_WRITABLE = (StreamState.OPEN, StreamState.CLOSE_READ)     # NetStream.write's states (the peer may have sent FIN)


def _fin_frame(ms: YamuxStream, data: bytes) -> bytes | None:
    """The DATA+FIN frame for `data`, its bytes taken from the send window; None if it does not fit one frame.
    The caller holds the stream's write and window locks."""
    if ms.closed or ms.send_closed or len(data) > ms.send_window or len(data) > MAX_MESSAGE_SIZE - HEADER_SIZE:
        return None
    ms.send_window -= len(data)
    return struct.pack(YAMUX_HEADER_FORMAT, 0, TYPE_DATA, FLAG_FIN, ms.stream_id, len(data)) + data


async def _write_with_fin(ms: YamuxStream, data: bytes) -> bool:
    """`data` and our FIN in one DATA frame, with YamuxStream.close's bookkeeping; False (nothing written) when it
    does not fit one frame."""
    async with ms.close_lock:
        async with ms.rw_lock.write_lock():
            async with ms.window_lock:
                frame = _fin_frame(ms, data)
        if frame is None:
            return False
        try:
            await ms.conn._write_frame(frame)
        finally:
            ms.send_closed = True       # as YamuxStream.close: even when the write failed
        ms.closed = ms.recv_closed
        await ms.conn._finalize_stream(ms, fully_closed=ms.closed)
    return True


async def write_and_close_write(stream, data: bytes) -> bool:
    """stream.write(data) and the FIN of our side in one frame (NetStream over yamux, state OPEN, when it fits):
    True. False (nothing written) otherwise: the caller writes as usual."""
    ms = getattr(stream, "muxed_stream", None)
    if not isinstance(ms, YamuxStream) or getattr(stream, "_state", None) is not StreamState.OPEN:
        return False
    if not await _write_with_fin(ms, data):
        return False
    async with stream._state_lock:      # as NetStream.close_write: reads go on until the peer's FIN
        if stream._state is StreamState.OPEN:
            stream._state = StreamState.CLOSE_WRITE
    return True


async def write_and_close(stream, data: bytes) -> None:
    """stream.write(data) then stream.close() (NetStream over yamux), in one frame when it fits."""
    data = take_deferred(stream) + data
    ms = getattr(stream, "muxed_stream", None)
    written = isinstance(ms, YamuxStream) and getattr(stream, "_state", None) in _WRITABLE \
        and await _write_with_fin(ms, data)
    if not written:                         # as upstream (a closed stream raises as it did)
        if data:
            await stream.write(data)
        await stream.close()
        return
    await stream.set_state(StreamState.CLOSE_BOTH)   # the rest of NetStream.close
    await stream.remove()
