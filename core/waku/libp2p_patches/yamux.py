"""Fix 15 (registry: __init__.py): yamux receive-window credit.

py-libp2p 0.8.1 (stream_muxer/yamux/yamux.py YamuxStream._auto_tune_and_send_window_update) sends a
WINDOW_UPDATE after nearly every read: its "partial slack" branch fires whenever any credit is owed and the
read returned data, and its RELEASE_ON_READ branch (on by default) credits every read's bytes otherwise. A
length prefix read one byte at a time therefore costs one window-update frame per byte, each Noise-encrypted
and sent by its own socket.send (~16 frames per lightpush request, 3 per relayed message).

Ours follows go-yamux (`Stream.sendWindowUpdate` / `segmentedBuffer.GrowTo`) and the yamux spec's advice:
credit the peer only once at least half of the receive window has been consumed, then all of it at once (plus
upstream's RTT auto-tuning, unchanged). The peer's send window never drops below half of ours, so no stall.

Fix 27: Yamux._write_frame (every frame sent) unpacks the header and builds a debug line (an f-string, a dict and a
list of flag names) before it writes, whether or not debug logging is on. `lean_write_frame` writes as upstream
(under the connection's write lock) and leaves the line to upstream when debug is on.

Fix 29: Yamux._write_frame ends with `trio.lowlevel.checkpoint()` after the write, but the write already ends in
one: trio's socket send yields after every successful send (`_try_sync`: checkpoint_if_cancelled before,
cancel_shielded_checkpoint after), as does every transport's write under Noise. So every frame sent was two
passes of the run loop for its task: under a relay flood, several ms each, paid by every request's answer
(docs/BENCHMARKS.md, "Waku load"). `lean_write_frame` has the send's scheduling point only.

Fixes 33 and 34: a new stream's ACK (33, the accepting side: Yamux.handle_incoming) and SYN (34, the opening side:
Yamux.open_stream) are each a 12-byte WINDOW_UPDATE frame written alone, one Noise message and one socket send
(and on the accepting side a scheduling point of the connection's reader task) before the stream's first frame.
`lean_write_frame` keeps such a frame on its stream (`_waku_held`) and writes it in front of the stream's next
frame, in the same write: the same two yamux frames in the same order, in one Noise message. With fix 33 on, an
ACK is held until the stream's first frame (the multistream echo, the deferred echo with the answer of fix 30, a
window update, a FIN or an RST; a held ACK of a stream finalized first is dropped with the stream). Fix 33 is OFF
by default (HOLD_ACK, below): a stream accepted and never written on would not be ACKed, and go-yamux closes the
session after 75 s without an ACK. A SYN is
held only for a task that asked for it (`hold_syn`) and that writes on the stream right after opening it
(`streams.open_stream`, which writes its proposal and request at once): a SYN held for an opener that waits for
the other side to speak first would never be sent. ARCHIVIST_WAKU_SEPARATE_SYN_ACK=1 leaves both out (benchmarks).
"""
from __future__ import annotations

import contextlib
import logging
import os
import struct

import trio
from libp2p.stream_muxer.yamux import yamux as _yamux_module
from libp2p.stream_muxer.yamux.yamux import FLAG_ACK, FLAG_SYN, TYPE_WINDOW_UPDATE, YAMUX_HEADER_FORMAT, Yamux, \
    YamuxStream

UPSTREAM_AUTO_TUNE = YamuxStream._auto_tune_and_send_window_update
UPSTREAM_WRITE_FRAME = Yamux._write_frame


async def half_window_update(self: YamuxStream, *, bytes_read: int = 0) -> None:
    """Send WINDOW_UPDATE only when the credit owed (bytes consumed since the last one) is >= half the window."""
    async with self.window_lock:
        buffered = len(self.conn.stream_buffers.get(self.stream_id, b""))
        owed = self.target_recv_window - (self.recv_window + buffered)
        if owed <= 0 or owed < self.target_recv_window // 2:
            return
        self.recv_window += owed
        self._pending_recv_release = 0
        increment = owed + self._apply_autotune_epoch(buffered)
    # never hold window_lock across the write (upstream's rule: inbound WINDOW_UPDATEs need it)
    await self.send_window_update(increment, skip_lock=True)


def install_half_window_updates() -> None:
    YamuxStream._auto_tune_and_send_window_update = half_window_update


HOLD = not os.environ.get("ARCHIVIST_WAKU_SEPARATE_SYN_ACK")     # fixes 33 and 34 (benchmarks: off to compare)
# Fix 33 is OFF unless ARCHIVIST_WAKU_HOLD_ACK=1 (benchmarks): go-yamux (go-libp2p: status-go, go-waku) closes the
# whole session when a stream it opened waits longer than its StreamOpenTimeout (75 s by default) for the ACK, and
# a stream we accept but never write on (a peer's gossipsub stream: we only read it) would send its held ACK only
# with its first window update, after 128 KiB received: on a quiet relay, never.
HOLD_ACK = HOLD and os.environ.get("ARCHIVIST_WAKU_HOLD_ACK") == "1"
_SYN_HOLDERS: set = set()       # trio tasks whose next SYN is held (fix 34)
_HEADER = struct.Struct(YAMUX_HEADER_FORMAT)


@contextlib.contextmanager
def hold_syn():
    """Fix 34: within this block, a SYN this task writes waits for the stream's first frame. The caller must write
    on the stream it opens as soon as the block ends (or reset it), and open no other stream in it."""
    task = trio.lowlevel.current_task()
    _SYN_HOLDERS.add(task)
    try:
        yield
    finally:
        _SYN_HOLDERS.discard(task)


def _hold_or_join(conn, data: bytes) -> bytes | None:
    """None: `data` (a lone ACK, or a lone SYN of a holding task) was kept on its stream. Otherwise the bytes to
    write: `data`, behind the frame its stream holds, if any."""
    streams = getattr(conn, "streams", None)
    if streams is None or len(data) < 12:
        return data
    _, typ, flags, sid, length = _HEADER.unpack_from(data)
    stream = streams.get(sid)
    if stream is None:
        return data
    if len(data) == 12 and typ == TYPE_WINDOW_UPDATE and length == 0 and HOLD and (
            (flags == FLAG_ACK and HOLD_ACK) or (flags == FLAG_SYN and trio.lowlevel.current_task() in _SYN_HOLDERS)) \
            and "_waku_held" not in stream.__dict__:
        stream._waku_held = data
        return None
    held = stream.__dict__.pop("_waku_held", None)
    return data if held is None else held + data


def held(stream) -> bytes:
    """The frame `stream` holds for its next write (b"" if none): for tests and diagnostics."""
    return getattr(stream, "_waku_held", b"")


async def lean_write_frame(self: Yamux, data: bytes) -> None:
    """fix 27: Yamux._write_frame without its debug line when debug logging is off; fix 29: without the second
    scheduling point (the socket send already was one); fixes 33-34: a lone ACK or SYN travels with the stream's
    next frame."""
    if _yamux_module.logger.isEnabledFor(logging.DEBUG):
        data = _hold_or_join(self, data)
        if data is not None:
            await UPSTREAM_WRITE_FRAME(self, data)
        return
    async with self._write_lock:        # joined under the lock: a held SYN goes out before any frame behind it
        data = _hold_or_join(self, data)
        if data is not None:
            await self.secured_conn.write(data)


def install_lean_write_frame() -> None:
    Yamux._write_frame = lean_write_frame
