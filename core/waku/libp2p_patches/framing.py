"""Fixes 6 and 22: length-prefixed frames (every pubsub RPC, every request and answer of ours).

6. read_exactly() gives up after 100 partial reads (io/utils.py DEFAULT_RETRY_READ_COUNT; big messages over
   mplex): our request/response protocols use their own length-prefixed read loop with a size limit
   (`read_length_prefixed`, `FrameTooLarge` for an oversize prefix whose body is left unread).
22. Length-prefixed frames are read one byte per call for their varint prefix, then the body (py-libp2p's
    utils/varint.py read_varint_prefixed_bytes_limited for every pubsub RPC, and our reader for every request):
    ~4 stream reads per RPC, each through NetStream's state lock, yamux's streams lock and a window check.
    `read_prefixed` reads a frame that has already arrived in the yamux receive buffer with one read, and
    otherwise waits for its first byte, then reads the rest as it is buffered. `install_fast_rpc_reads` (global)
    puts it under pubsub.
"""
from __future__ import annotations

from core.varint import DecodeError, write_varint


def buffered(stream) -> bytearray | None:
    """The yamux receive buffer behind `stream` (bytes arrived and not yet read; the same object keeps filling),
    or None when there is none to look at (mplex, WebSocket without yamux, a closed stream)."""
    ms = getattr(stream, "muxed_stream", stream)
    conn = getattr(ms, "conn", None)
    bufs = getattr(conn, "stream_buffers", None)
    if bufs is None:
        return None
    sid = getattr(ms, "stream_id", None)
    buf = bufs.get(sid)
    if buf is None and getattr(conn, "_waku_unread", None):     # fix 28: kept after the connection ended
        return conn._waku_unread.get(sid)
    return buf


def _varint(head: bytes) -> tuple[int, int] | None:
    """(value, bytes used) of a complete uvarint at the start of `head`; None if incomplete; ValueError past 10."""
    value = shift = 0
    for i, b in enumerate(head[:10]):
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i + 1
        shift += 7
    if len(head) >= 10:
        raise ValueError("varint longer than 10 bytes")
    return None


async def _read_exact(stream, n: int, eof) -> bytes:
    parts, have = [], 0
    while have < n:
        chunk = await stream.read(n - have)
        if not chunk:
            raise eof(f"stream closed after {have} of {n} bytes")
        parts.append(chunk)
        have += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


async def read_prefixed(stream, max_size: int, *, eof, too_large, bad_prefix) -> bytes:
    """One uvarint-length-prefixed frame. Exceptions come from the caller's factories: eof(text) when the stream
    ends early, too_large(length) for a prefix over `max_size` (the body is left unread), bad_prefix(text)."""
    head = b""
    buf = buffered(stream)
    if not buf:
        head = await stream.read(1)                 # wait for the frame to start
        if not head:
            raise eof("stream closed before length prefix")
        buf = buffered(stream)
    try:
        parsed = _varint(head + bytes(buf[:10]) if buf else head)
        while parsed is None:                       # the prefix has not fully arrived: byte by byte, as upstream
            more = await stream.read(1)             # (what was buffered is read first, so `head` is in order)
            if not more:
                raise eof("stream closed inside length prefix")
            head += more
            parsed = _varint(head)
    except ValueError as e:
        raise bad_prefix(str(e)) from None
    length, used = parsed
    if length > max_size:
        if used > len(head):                        # consume the prefix: the caller may drain the body
            await _read_exact(stream, used - len(head), eof)
        raise too_large(length)
    rest = used - len(head) + length                # prefix bytes still unread + body
    data = await _read_exact(stream, rest, eof) if rest else b""
    return data[used - len(head):]


async def read_rpc(reader, max_length: int) -> bytes:
    """fix 22: pubsub's RPC reader (utils/varint.py read_varint_prefixed_bytes_limited), with its exceptions."""
    from libp2p.exceptions import ParseError
    from libp2p.io.exceptions import IncompleteReadError, MessageTooLarge
    return await read_prefixed(reader, max_length, eof=IncompleteReadError, bad_prefix=ParseError,
                               too_large=lambda n: MessageTooLarge(f"Message length {n} exceeds maximum allowed "
                                                                   f"{max_length}"))


UPSTREAM_READ_RPC = None   # py-libp2p's reader, kept for the tests that show its cost


def install_fast_rpc_reads() -> None:
    global UPSTREAM_READ_RPC
    from libp2p.pubsub import pubsub
    if pubsub.read_varint_prefixed_bytes_limited is not read_rpc:
        UPSTREAM_READ_RPC = pubsub.read_varint_prefixed_bytes_limited
        pubsub.read_varint_prefixed_bytes_limited = read_rpc


# --- fix 6: our own length-prefixed framing ---
class FrameTooLarge(DecodeError):
    """A length prefix above the limit; the body has not been read (`size` bytes still follow)."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"frame of {size} bytes exceeds {limit}")
        self.size, self.limit = size, limit


async def read_length_prefixed(stream, max_size: int) -> bytes:
    """fix 6: one uvarint-length-prefixed frame (fix 22: one read when it has arrived); raises DecodeError on a
    bad prefix or EOF, FrameTooLarge on an oversize prefix (consumed; the body is not)."""
    return await read_prefixed(stream, max_size, eof=DecodeError, bad_prefix=DecodeError,
                               too_large=lambda n: FrameTooLarge(n, max_size))


async def write_length_prefixed(stream, data: bytes) -> None:
    await stream.write(write_varint(len(data)) + data)

