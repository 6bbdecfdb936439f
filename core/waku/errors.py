"""The errors the Waku backends raise to their callers (the node engine): one base type, `WakuError`.

A call that involves a remote peer (dial, store query, lightpush) fails with `WakuPeerError` whatever went wrong
underneath (py-libp2p's SwarmException / StreamFailure / stream resets, a socket error, trio's TooSlowError, a
malformed answer), so callers never need to know py-libp2p's exception types. A peer that answered but refused
(a non-200 store status) raises `StoreQueryError`; the nwaku REST backend raises `RestError`
(core/waku/nwaku_rest.py). All three are `WakuError`s.
"""
from __future__ import annotations

import trio
from libp2p.exceptions import BaseLibp2pError
from libp2p.host.exceptions import StreamFailure
from libp2p.network.exceptions import SwarmException
from libp2p.protocol_muxer.exceptions import MultiselectClientError, MultiselectError

from core.varint import DecodeError

# WakuPeerError.kind
UNREACHABLE = "unreachable"     # no connection could be made (dial failed, no known address, negative cache)
UNSUPPORTED = "unsupported"     # connected, but the peer does not serve the protocol
CLOSED = "closed"               # the stream or connection was reset/closed mid-exchange (the peer went away)
TIMEOUT = "timeout"             # no answer within the call's deadline
MALFORMED = "malformed"         # the peer answered with bytes we cannot decode
BAD_ADDRESS = "bad address"     # the multiaddr or peer id we were given does not parse
FAILED = "failed"               # anything else from the network stack
CANCELLED = "cancelled"         # ended by our side: the engine is stopping (EmbeddedWakuBackend.cancel_queries)


class WakuError(RuntimeError):
    """Base of every error a Waku backend raises for a failed network call."""


class WakuPeerError(WakuError):
    """A call to a remote peer failed. `peer`: peer id or multiaddr as given; `op`: "dial", "store query",
    "lightpush"; `kind`: one of the constants above; `reason`: what happened, in words. The original exception
    is chained as __cause__ (for logs only: its type is py-libp2p's and may change)."""

    def __init__(self, peer: str | None, op: str, kind: str, reason: str):
        super().__init__(f"{op} to {peer}: {kind}: {reason}")
        self.peer, self.op, self.kind, self.reason = peer, op, kind, reason


class StoreQueryError(WakuError):
    """The store peer answered with a status other than 200 (e.g. 400 bad cursor, 429 too many requests)."""

    def __init__(self, code: int, desc: str, peer: str | None = None):
        super().__init__(f"store query failed: {code} {desc}")
        self.code, self.desc, self.peer = code, desc, peer


def _chain(e: BaseException):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def _leaves(g: BaseException):
    if isinstance(g, BaseExceptionGroup):
        for x in g.exceptions:
            yield from _leaves(x)
    else:
        yield g


def classify(e: BaseException, timeout_s: float | None = None) -> tuple[str, str] | None:
    """(kind, reason) for an exception of a peer call, or None if it is not a network failure (a bug of ours,
    or cancellation: re-raised unchanged)."""
    if isinstance(e, trio.TooSlowError):
        return TIMEOUT, f"no answer within {timeout_s:g} s" if timeout_s is not None else "no answer in time"
    if isinstance(e, StreamFailure):
        if any(isinstance(c, (MultiselectClientError, MultiselectError)) for c in _chain(e)):
            return UNSUPPORTED, f"the peer does not serve the protocol ({e})"
        return UNREACHABLE, str(e)
    if isinstance(e, SwarmException):
        return UNREACHABLE, str(e)
    if isinstance(e, DecodeError):
        text = str(e)
        return (CLOSED if "closed" in text else MALFORMED), text
    if isinstance(e, (BaseLibp2pError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError,
                      ConnectionError)):
        return CLOSED, f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    if isinstance(e, OSError):
        return FAILED, f"{type(e).__name__}: {e}"
    if isinstance(e, ValueError):  # multiaddr / peer id parsing (after DecodeError, which is a ValueError)
        return BAD_ADDRESS, str(e)
    return None


def peer_error(e: BaseException, peer: str | None, op: str, timeout_s: float | None = None) -> BaseException:
    """The WakuPeerError to raise instead of `e`, or `e` itself when it is not a network failure."""
    if isinstance(e, BaseExceptionGroup):  # a nursery inside py-libp2p: judge by its first network failure
        leaves = [x for x in _leaves(e) if classify(x, timeout_s) is not None]
        if not leaves or len(leaves) != len(list(_leaves(e))):
            return e
        e = leaves[0]
    c = classify(e, timeout_s)
    if c is None:
        return e
    err = WakuPeerError(peer, op, *c)
    err.__cause__ = e
    return err
