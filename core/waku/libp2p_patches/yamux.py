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

Fix 37: Yamux._read_data_body (every DATA frame's body, read by the connection's reader task) enters a
`trio.fail_after` (a cancel scope, and an environment lookup for its timeout) around `read_exactly`, even when the
whole body is already decrypted in the Noise session's buffer behind its header (the usual case: a request or an
answer arrives in one Noise message), where the read cannot wait and the timeout cannot fire. `read_data_body`
takes such a body straight from the buffer (SecureSession._drain, what upstream's read returns for it, with no
scheduling point either way) and leaves every other read to upstream, timeout included.

Fixes 33 and 34: a new stream's ACK (33, the accepting side: Yamux.handle_incoming) and SYN (34, the opening side:
Yamux.open_stream) are each a 12-byte WINDOW_UPDATE frame written alone, one Noise message and one socket send
(and on the accepting side a scheduling point of the connection's reader task) before the stream's first frame.
`lean_write_frame` keeps such a frame on its stream (`_waku_held`) and writes it in front of the stream's next
frame, in the same write: the same two yamux frames in the same order, in one Noise message. A held ACK waits for
the stream's first frame (the multistream echo, the deferred echo with the answer of fix 30, a window update, a
FIN or an RST) **or ACK_HOLD_S (20 ms), whichever comes first**: one flusher task per trio run (a system task,
started with the first held ACK) looks every ACK_TICK_S (10 ms) at most for ACKs held that long and has each
written alone by its connection's nursery, as upstream writes it at once; so no ACK goes out later than
ACK_DEADLINE_S (30 ms) after its SYN. A stream accepted and never written on (a peer's gossipsub stream: we only
read it) is ACKed within 30 ms, far inside go-yamux's StreamOpenTimeout (75 s, after which it closes the whole
session), and a request answered within 20 ms sends its ACK with the answer. Under a flood the flusher takes
about 100 steps a second in all, not one per stream (held ACKs are queued in arrival order; a new one wakes it
only when the queue was empty). A held ACK of a stream finalized first is dropped with the stream. A
SYN is held only for a task that asked for it (`hold_syn`) and that writes on the stream right after opening it
(`streams.open_stream`, which writes its proposal and request at once): a SYN held for an opener that waits for
the other side to speak first would never be sent. ARCHIVIST_WAKU_SEPARATE_SYN_ACK=1 leaves both out,
ARCHIVIST_WAKU_ACK_AT_ONCE=1 only 33; ARCHIVIST_WAKU_ACK_HOLD_MS sets the hold (benchmarks).
"""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import struct

import trio
from libp2p.security.secure_session import SecureSession
from libp2p.stream_muxer.yamux import yamux as _yamux_module
from libp2p.stream_muxer.yamux.yamux import FLAG_ACK, FLAG_SYN, TYPE_WINDOW_UPDATE, YAMUX_HEADER_FORMAT, Yamux, \
    YamuxStream

UPSTREAM_AUTO_TUNE = YamuxStream._auto_tune_and_send_window_update
UPSTREAM_WRITE_FRAME = Yamux._write_frame
UPSTREAM_READ_DATA_BODY = Yamux._read_data_body


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
HOLD_ACK = HOLD and not os.environ.get("ARCHIVIST_WAKU_ACK_AT_ONCE")  # fix 33 alone off (benchmarks)
# A held ACK goes out alone once it has waited ACK_HOLD_S and the flusher's next look (every ACK_TICK_S) finds it:
# never later than ACK_DEADLINE_S after its SYN. go-yamux (go-libp2p: status-go, go-waku) closes the whole session
# when a stream it opened waits longer than its StreamOpenTimeout (75 s) for the ACK.
ACK_HOLD_S = float(os.environ.get("ARCHIVIST_WAKU_ACK_HOLD_MS") or 20) / 1000
ACK_TICK_S = ACK_HOLD_S / 2
ACK_DEADLINE_S = ACK_HOLD_S + ACK_TICK_S
ACK_STATS = {"held": 0, "alone": 0, "wakes": 0}   # ACKs held, written alone at their deadline; flusher steps
if os.environ.get("ARCHIVIST_WAKU_ACK_STATS"):     # benchmarks: printed on stderr when the process exits
    import atexit
    import sys
    atexit.register(lambda: print(f"yamux ACKs held {ACK_STATS['held']}, written alone at the deadline "
                                  f"{ACK_STATS['alone']}, flusher steps {ACK_STATS['wakes']}", file=sys.stderr))
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
    if len(data) == 12 and typ == TYPE_WINDOW_UPDATE and length == 0 and HOLD \
            and "_waku_held" not in stream.__dict__:
        if flags == FLAG_ACK and HOLD_ACK and _ack_deadline(conn, stream):
            stream._waku_held = data
            return None
        if flags == FLAG_SYN and trio.lowlevel.current_task() in _SYN_HOLDERS:
            stream._waku_held = data
            return None
    held = stream.__dict__.pop("_waku_held", None)
    return data if held is None else held + data


class _AckTimer:
    """The held ACKs of one trio run, oldest first: (due, yamux connection, stream)."""

    def __init__(self):
        self.queue: collections.deque = collections.deque()
        self.wakeup = trio.Event()


_TIMER: trio.lowlevel.RunVar = trio.lowlevel.RunVar("waku_ack_timer")


def _ack_deadline(conn, stream) -> bool:
    """Queue `stream`'s ACK for the run's flusher (a system task, started on first use); False when the connection
    has no nursery to write it from (then the ACK is written at once, as upstream)."""
    if getattr(conn, "_nursery", None) is None:
        return False
    try:
        timer = _TIMER.get()
    except LookupError:
        timer = _AckTimer()
        _TIMER.set(timer)
        trio.lowlevel.spawn_system_task(_flush_acks, timer, name="waku yamux ACK flusher (fix 33)")
    if not timer.queue:
        timer.wakeup.set()
    timer.queue.append((trio.current_time() + ACK_HOLD_S, conn, stream))
    ACK_STATS["held"] += 1
    return True


async def _flush_acks(timer: _AckTimer) -> None:
    """Fix 33's deadline, one task per trio run (all connections): every ACK still held ACK_HOLD_S after its SYN
    arrived is written alone, looked for at most every ACK_TICK_S (under a flood: ~100 steps a second in all, not
    one per stream). The write runs in the connection's own nursery, so a connection whose socket is full (a peer
    that stopped reading) delays only its own ACKs. Never raises: a system task's error would end the run."""
    queue, log = timer.queue, logging.getLogger(__name__)
    while True:
        if not queue:
            timer.wakeup = trio.Event()
            await timer.wakeup.wait()
            ACK_STATS["wakes"] += 1
        await trio.sleep_until(queue[0][0] + ACK_TICK_S)
        ACK_STATS["wakes"] += 1
        now = trio.current_time()
        while queue and queue[0][0] <= now:
            _, conn, stream = queue.popleft()
            if "_waku_held" not in stream.__dict__:
                continue                                # it went out with the stream's first frame
            try:
                conn._nursery.start_soon(_write_held, conn, stream)
            except Exception as e:  # noqa: BLE001 - the connection's nursery is closed: nothing to ACK
                stream.__dict__.pop("_waku_held", None)
                log.debug("yamux: no ACK for a stream of a closed connection: %r", e)


async def _write_held(conn, stream) -> None:
    """Write `stream`'s held ACK alone, under the write lock (where the stream's own first write would take it)."""
    try:
        async with conn._write_lock:
            data = stream.__dict__.pop("_waku_held", None)
            if data is not None and conn.streams.get(stream.stream_id) is stream:
                ACK_STATS["alone"] += 1
                await conn.secured_conn.write(data)
    except Exception as e:  # noqa: BLE001 - the connection is gone: nothing left to ACK
        logging.getLogger(__name__).debug("yamux: ACK of %s not written: %r", conn.peer_id, e)


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


async def read_data_body(self: Yamux, length: int) -> bytes:
    """fix 37: a DATA frame's body already decrypted in the Noise session's buffer is taken from it without a
    timeout scope; anything else is read as upstream does."""
    sc = self.secured_conn
    if type(sc) is SecureSession and sc.high_watermark - sc.low_watermark >= length > 0:
        return sc._drain(length)
    return await UPSTREAM_READ_DATA_BODY(self, length)


def install_buffered_bodies() -> None:
    Yamux._read_data_body = read_data_body
