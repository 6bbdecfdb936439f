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
"""
from __future__ import annotations

import logging

from libp2p.stream_muxer.yamux import yamux as _yamux_module
from libp2p.stream_muxer.yamux.yamux import Yamux, YamuxStream

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


async def lean_write_frame(self: Yamux, data: bytes) -> None:
    """fix 27: Yamux._write_frame without its debug line when debug logging is off; fix 29: without the second
    scheduling point (the socket send already was one)."""
    if _yamux_module.logger.isEnabledFor(logging.DEBUG):
        await UPSTREAM_WRITE_FRAME(self, data)
        return
    async with self._write_lock:
        await self.secured_conn.write(data)


def install_lean_write_frame() -> None:
    Yamux._write_frame = lean_write_frame
