"""py-libp2p fix 15 (see libp2p_fixes.py): yamux receive-window credit.

py-libp2p 0.8.1 (stream_muxer/yamux/yamux.py YamuxStream._auto_tune_and_send_window_update) sends a
WINDOW_UPDATE after nearly every read: its "partial slack" branch fires whenever any credit is owed and the
read returned data, and its RELEASE_ON_READ branch (on by default) credits every read's bytes otherwise. A
length prefix read one byte at a time therefore costs one window-update frame per byte, each Noise-encrypted
and sent by its own socket.send (~16 frames per lightpush request, 3 per relayed message).

Ours follows go-yamux (`Stream.sendWindowUpdate` / `segmentedBuffer.GrowTo`) and the yamux spec's advice:
credit the peer only once at least half of the receive window has been consumed, then all of it at once (plus
upstream's RTT auto-tuning, unchanged). The peer's send window never drops below half of ours, so no stall.
"""
from __future__ import annotations

from libp2p.stream_muxer.yamux.yamux import YamuxStream

UPSTREAM_AUTO_TUNE = YamuxStream._auto_tune_and_send_window_update


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
