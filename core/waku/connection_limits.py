"""Connection limits of the Waku node: who may hold a socket, for how long, and how many (issue 21).

py-libp2p 0.8.1 alone lets ~250 silent sockets lock every new peer out (fixes 11-13 in
libp2p_patches/connections.py say why); the swarm hooks installed there ask an `InboundGate` before they
spend anything on a connection:

- an incoming socket from an IP that already holds `max_incoming_per_ip` connections (handshaking or
  established) is closed at once;
- at most `max_handshakes` incoming connections may be in their handshake (Noise + muxer) at a time, each for at
  most `handshake_timeout_s`; when a new socket arrives with every slot taken, the *oldest* handshake is
  dropped, so silent sockets cannot keep a newcomer out for longer than it takes to complete a handshake;
- once the handshake names the peer, an unprotected peer is refused when `max_incoming` established incoming
  connections of unprotected peers already exist. Protected peers (configured ones, and every peer we dialled)
  never count and are never refused by this limit;
- outbound dials have `outbound_reserve` connections on top of `max_incoming` (py-libp2p's `max_connections`
  covers both directions), so strangers cannot use up the room for the peers we choose.

Refusals are counted by reason in `InboundGate.refused`. `InboundGate.wait_until` waits for a condition on the
books (re-checked whenever they change) instead of polling them.
"""
from __future__ import annotations

import math
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Callable

import trio


@dataclass(frozen=True)
class ConnectionLimits:
    max_incoming: int = 200             # established incoming connections of unprotected peers
    max_incoming_per_ip: int = 8        # incoming connections per remote IP (handshaking + established)
    max_handshakes: int = 64            # incoming connections still in their handshake; beyond, the oldest goes
    handshake_timeout_s: float = 3.0    # Noise + muxer negotiation deadline (py-libp2p: 10 s)
    max_streams_per_conn: int = 64      # inbound streams open at once on one connection; more are reset
    outbound_reserve: int = 100         # room for dialled and protected peers above max_incoming

    def __post_init__(self) -> None:
        for name in ("max_incoming", "max_incoming_per_ip", "max_handshakes", "max_streams_per_conn"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.outbound_reserve < 0:
            raise ValueError("outbound_reserve must be >= 0")
        if not self.handshake_timeout_s > 0:
            raise ValueError("handshake_timeout_s must be positive")

    @property
    def max_connections(self) -> int:
        """py-libp2p's total (inbound + outbound) cap."""
        return self.max_incoming + self.outbound_reserve


class Ticket:
    """One admitted incoming socket: its IP, the cancel scope that bounds its handshake, then its connection."""

    __slots__ = ("ip", "scope", "conn")

    def __init__(self, ip: str, deadline: float):
        self.ip = ip
        self.scope = trio.CancelScope(deadline=deadline)
        self.conn = None


class InboundGate:
    """The bookkeeping; trio-thread only (no locks: nothing here awaits)."""

    def __init__(self, limits: ConnectionLimits, *, is_protected: Callable[[object], bool],
                 count_incoming: Callable[[], int]):
        self.limits = limits
        self.is_protected = is_protected        # peer ID -> bool
        self.count_incoming = count_incoming    # established incoming connections of unprotected peers
        self.per_ip: Counter[str] = Counter()
        self.handshaking: OrderedDict[Ticket, None] = OrderedDict()
        self.refused: Counter[str] = Counter()  # reason -> count
        self.admitted = 0
        self._changed = trio.Event()            # set (and replaced) after every change of the books

    def open(self, ip: str) -> Ticket | None:
        """A new socket from `ip`: a ticket, or None (close it) when the IP is at its limit."""
        if self.per_ip[ip] >= self.limits.max_incoming_per_ip:
            self.refused["per ip"] += 1
            self._touch()
            return None
        while len(self.handshaking) >= self.limits.max_handshakes:
            oldest, _ = self.handshaking.popitem(last=False)
            oldest.scope.cancel()
            self.refused["handshake evicted"] += 1
        t = Ticket(ip, trio.current_time() + self.limits.handshake_timeout_s)
        self.per_ip[ip] += 1
        self.handshaking[t] = None
        self.admitted += 1
        self._touch()
        return t

    def established(self, t: Ticket, peer_id) -> bool:
        """The handshake named the peer: False (close it) if it is unprotected and incoming is full."""
        self.handshaking.pop(t, None)
        self._touch()
        if not self.is_protected(peer_id) and self.count_incoming() >= self.limits.max_incoming:
            self.refused["incoming full"] += 1
            return False
        t.scope.deadline = math.inf
        return True

    def close(self, t: Ticket) -> None:
        if t in self.handshaking:  # never got through its handshake (and was not evicted)
            late = t.scope.cancelled_caught or trio.current_time() >= t.scope.deadline
            self.refused["handshake timeout" if late else "handshake failed"] += 1
            del self.handshaking[t]
        self.per_ip[t.ip] -= 1
        if self.per_ip[t.ip] <= 0:
            del self.per_ip[t.ip]
        self._touch()

    def _touch(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, cond: Callable[[], bool], timeout: float = 10.0) -> None:
        """Return once `cond()` holds (say, no handshake left), re-checked after every change of the books;
        trio.TooSlowError after `timeout`."""
        with trio.fail_after(timeout):
            while not cond():
                await self._changed.wait()

    def stats(self) -> dict:
        return {"handshaking": len(self.handshaking), "per_ip": dict(self.per_ip), "admitted": self.admitted,
                "refused": dict(self.refused), "incoming": self.count_incoming()}
