"""Fix 25 (registry: __init__.py): a read-ahead on the TCP socket.

py-libp2p 0.8.1 (io/trio.py TrioTCPStream.read) asks the socket for exactly what its caller wants: Noise reads a
message's 2-byte length, then its body, so every yamux frame costs two socket receives, each a trip through
trio's scheduler (and often an epoll call). `read_ahead` receives up to READ_AHEAD bytes at once and serves later
reads from what is left without a scheduling point: one pass of yamux's loop (and then of pubsub's reader) takes
every frame that arrived. About half the node CPU per relayed message (docs/BENCHMARKS.md, "Waku load"); 16 KiB
gave the same CPU as 64 KiB with shorter store-query waits during a relay flood (a pass takes fewer frames).

Safe only with fix 28 (unread.py): without a scheduling point between frames, an answer and the GO_AWAY (or EOF)
right behind it are processed in one go, and upstream's yamux dropped the answer before its reader ran.
"""
from __future__ import annotations

import trio
from libp2p.io.exceptions import ConnectionClosedError
from libp2p.io.trio import TrioTCPStream

READ_AHEAD = 16384
UPSTREAM_READ = TrioTCPStream.read


def _from_ahead(self: TrioTCPStream, n: int | None) -> bytes | None:
    ahead = self.__dict__.get("_waku_ahead")
    if not ahead:
        return None
    pos = self._waku_ahead_pos
    end = len(ahead) if n is None or n < 0 else min(len(ahead), pos + n)
    if end == len(ahead):
        self._waku_ahead = None
        return ahead[pos:] if pos else ahead
    self._waku_ahead_pos = end
    return ahead[pos:end]


async def read_ahead(self: TrioTCPStream, n: int | None = None) -> bytes:
    """TrioTCPStream.read: up to n bytes (None: what one receive gives); already-received bytes without yielding."""
    if n is not None and n == 0:
        return b""
    data = _from_ahead(self, n)
    if data is not None:
        return data
    async with self.read_lock:
        data = _from_ahead(self, n)         # another reader filled it while we waited for the lock
        if data is not None:
            return data
        try:
            chunk = await self.stream.receive_some(READ_AHEAD if n is None or n < READ_AHEAD else n)
        except trio.BrokenResourceError as error:
            raise ConnectionClosedError(f"TCP connection reset by remote peer: {error}", transport="tcp") from error
        except trio.ClosedResourceError:
            return b""          # closed locally: EOF, as upstream
        if n is None or n < 0 or len(chunk) <= n:
            return chunk
        self._waku_ahead, self._waku_ahead_pos = chunk, n
        return chunk[:n]


def install_read_ahead() -> None:
    TrioTCPStream.read = read_ahead
