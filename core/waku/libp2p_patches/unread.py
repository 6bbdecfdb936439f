"""Fix 28 (registry: __init__.py): a yamux stream's unread data stays readable when its connection ends.

py-libp2p 0.8.1 (stream_muxer/yamux/yamux.py) throws away what a stream has received and not yet read when the
connection ends from the other side: a GO_AWAY frame, the socket's EOF or a read error set `event_shutting_down`
(after which `Yamux.read_stream` raises EOF whatever is buffered) and `Yamux._cleanup_on_error` clears every
stream's buffer and removes the stream. An answer followed at once by a disconnect (a metadata answer from a peer
of another cluster) is lost unless the reader happened to run between the two frames. go-yamux keeps a closed
stream's receive buffer readable (`Stream.Read` drains `recvBuf` before it reports EOF).

Ours: `cleanup_on_error` moves each stream's receive buffer (the same bytearray, so a reader in the middle of it
neither loses nor repeats bytes) into `Yamux._waku_unread` before upstream's cleanup runs. `stream_read` (YamuxStream
.read) serves those bytes first, also when upstream's read ends in EOF or reset because the connection went away
while it waited, and only then lets the reader see EOF (the stream had its FIN) or a reset (it had not).
`netstream_read` does the same above the swarm's reset of every stream of a closed connection
(network/connection/swarm_connection.py SwarmConn._cleanup), so the data does not depend on the reader running
within that function's 0.1 s sleep. Serving leftover bytes never yields (no scheduling point), so a reader takes a
whole frame in one go. Our own close of a connection (`Yamux.close`) still drops unread data, as upstream: we
chose to end it. mplex already keeps queued data after a reset (MplexStream._do_read).
"""
from __future__ import annotations

from libp2p.network.stream.net_stream import NetStream, StreamState
from libp2p.stream_muxer.exceptions import MuxedStreamEOF, MuxedStreamReset
from libp2p.stream_muxer.yamux.yamux import Yamux, YamuxStream

UPSTREAM_CLEANUP = Yamux._cleanup_on_error
UPSTREAM_STREAM_READ = YamuxStream.read
UPSTREAM_NETSTREAM_READ = NetStream.read


def _take(stream: YamuxStream, n: int | None) -> bytes:
    """Up to n (None or -1: all) kept bytes of `stream`, without a scheduling point; b"" when none are left."""
    kept = getattr(stream.conn, "_waku_unread", None)
    if not kept:
        return b""
    buf = kept.get(stream.stream_id)
    if not buf:
        if buf is not None:
            del kept[stream.stream_id]
        return b""
    if n is None or n < 0 or n >= len(buf):
        data = bytes(buf)
        buf.clear()
    else:
        data = bytes(buf[:n])
        del buf[:n]
    if not buf:
        del kept[stream.stream_id]
    return data


def _keep_unread(self: Yamux) -> None:
    """Move every non-empty receive buffer to `_waku_unread` (synchronously: nothing can read or add meanwhile).
    A stream that had its FIN ends in EOF once drained, the others in a reset (as upstream reports them)."""
    kept = self.__dict__.setdefault("_waku_unread", {})
    for sid, buf in list(self.stream_buffers.items()):
        stream = self.streams.get(sid)
        if buf and stream is not None:
            kept[sid] = buf
            stream._waku_fin = stream.recv_closed and not stream.reset_received
            del self.stream_buffers[sid]


async def cleanup_on_error(self: Yamux) -> None:
    """fix 28: Yamux._cleanup_on_error (the connection ended from the other side), keeping unread data."""
    _keep_unread(self)
    fin = {sid: s for sid, s in self.streams.items() if getattr(s, "_waku_fin", False)}
    await UPSTREAM_CLEANUP(self)
    for stream in fin.values():          # upstream marks every stream reset; one that had its FIN ends in EOF
        stream.reset_received = False


async def stream_read(self: YamuxStream, n: int | None = -1) -> bytes:
    """fix 28: YamuxStream.read; kept bytes first, and when the connection ended during the read."""
    if getattr(self.conn, "_waku_unread", None):
        data = _take(self, n)
        if data:
            return data
    try:
        return await UPSTREAM_STREAM_READ(self, n)
    except (MuxedStreamEOF, MuxedStreamReset):
        if not self.conn.event_shutting_down.is_set():
            raise
        data = _take(self, n)
        if data:
            return data
        buf = self.conn.stream_buffers.get(self.stream_id)     # shutting down, cleanup not run yet
        if buf:
            data = bytes(buf if n is None or n < 0 else buf[:n])
            del buf[:len(data)]
            return data
        raise


async def netstream_read(self: NetStream, n: int | None = None) -> bytes:
    """fix 28: NetStream.read; a stream the swarm reset because its connection ended still gives its kept bytes."""
    if self._state is StreamState.RESET and isinstance(self.muxed_stream, YamuxStream):
        data = _take(self.muxed_stream, n)
        if data:
            return data
    return await UPSTREAM_NETSTREAM_READ(self, n)


def install_unread_kept() -> None:
    Yamux._cleanup_on_error = cleanup_on_error
    YamuxStream.read = stream_read
    NetStream.read = netstream_read


def installed() -> bool:
    return (Yamux._cleanup_on_error is cleanup_on_error and YamuxStream.read is stream_read
            and NetStream.read is netstream_read)
