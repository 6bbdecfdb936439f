"""One request/response exchange at the edge, shared by the store, lightpush and metadata servers.

Every read and write has a deadline (a stream that never sends is reset, not kept open forever), and a request
whose length prefix is over the limit gets the protocol's error answer (`refuse(text)`) instead of a silently
closed stream. The unread body is then drained (up to DRAIN_LIMIT, within the deadline) so that the client,
which writes its whole request before reading, can finish writing and read the answer; with yamux an unread
body would stall the client's write on flow control, with mplex it would stall the whole connection.
"""
from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass
from typing import Awaitable, Callable

import trio

from libp2p.network.stream.net_stream import StreamState

from core.varint import write_varint
from core.waku.libp2p_patches.framing import FrameTooLarge, read_length_prefixed
from core.waku.libp2p_patches.oneframe import take_deferred, write_and_close

DEFAULT_READ_TIMEOUT_S = 10.0
DRAIN_LIMIT = 16 * 1024 * 1024   # beyond this an oversize request is answered and reset, not drained
log = logging.getLogger(__name__)

Answer = Callable[[bytes], Awaitable[bytes | None]]   # request bytes -> response bytes (None: no answer)
Refuse = Callable[[str], bytes | None]                 # refusal text -> the protocol's error answer


@dataclass(frozen=True)
class Exchange:
    name: str                       # for logs: "store v3", "lightpush v3", ...
    max_request: int
    timeout_s: float = DEFAULT_READ_TIMEOUT_S
    refuse: Refuse | None = None    # None: the protocol has no error answer; the stream is just closed


def _peer(stream) -> str:
    try:
        return stream.muxed_conn.peer_id.pretty()
    except Exception:  # noqa: BLE001 - only for the log line
        return "?"


async def serve_exchange(stream, ex: Exchange, answer: Answer) -> None:
    """Read one request, answer it, close. Never raises (a handler must not take the connection down).
    One cancel scope whose deadline is moved for each step (the read, then the write; none while `answer` runs):
    entering and leaving a trio cancel scope per step was ~5 % of the node's profiled CPU under a lightpush flood."""
    reset = False
    try:
        with trio.CancelScope(deadline=trio.current_time() + ex.timeout_s) as scope:
            try:
                data = await read_length_prefixed(stream, ex.max_request)
            except FrameTooLarge as e:
                text = f"request is {e.size} bytes (max {e.limit})"
                log.info("%s: refused a request from %s: %s", ex.name, _peer(stream), text)
                out = ex.refuse(text) if ex.refuse is not None else None
                if out is not None:
                    scope.deadline = trio.current_time() + ex.timeout_s
                    await stream.write(take_deferred(stream) + write_varint(len(out)) + out)
                scope.deadline = math.inf                   # _drain has its own deadline
                reset = not await _drain(stream, e.size, ex.timeout_s)
                return
            scope.deadline = math.inf
            out = await answer(data)
            if out is not None:
                scope.deadline = trio.current_time() + ex.timeout_s
                # the deferred multistream echo, the answer and the FIN in one frame (libp2p_patches/oneframe.py)
                await write_and_close(stream, write_varint(len(out)) + out)
                return
        if scope.cancelled_caught:
            log.info("%s: reset a stream from %s: no progress within %s s", ex.name, _peer(stream), ex.timeout_s)
            reset = True
    except Exception as e:  # noqa: BLE001 - malformed framing, broken stream
        log.debug("%s request failed: %s", ex.name, e)
    finally:
        await _finish(stream, reset, ex.timeout_s)


async def _drain(stream, size: int, timeout_s: float) -> bool:
    """Discard the `size` body bytes of a refused request; False if too big, too slow or broken."""
    if size > DRAIN_LIMIT:
        return False
    left = size
    with trio.move_on_after(timeout_s):
        try:
            while left > 0:
                chunk = await stream.read(min(left, 64 * 1024))
                if not chunk:
                    return True
                left -= len(chunk)
        except Exception:  # noqa: BLE001 - the client went away: nothing left to do
            return False
        return True
    return False


async def _finish(stream, reset: bool, timeout_s: float) -> None:
    if getattr(stream, "_state", None) is StreamState.CLOSE_BOTH:    # answered and closed in one frame
        return
    with contextlib.suppress(Exception), trio.move_on_after(timeout_s) as scope:
        if reset:
            await stream.reset()
        else:
            await write_and_close(stream, b"")   # a deferred echo still goes out: negotiation succeeded
    if scope.cancelled_caught:
        with contextlib.suppress(Exception):
            await stream.reset()
