"""Fixes 11-13: py-libp2p's incoming connection handling, replaced by hooks that ask connection_limits.InboundGate.

11. Swarm._handle_inbound_connection holds its inbound slot (`max_connections - min_connections`, 250 by
    default) until the *swarm* stops, not the connection: after 250 incoming connections in a node's life every
    new one is refused. It has no per-IP limit, and a silent socket holds its slot for `inbound_upgrade_timeout`
    (10 s). Replaced per swarm by our handler: a slot per connection for as long as it lives, per-IP and
    handshake limits with a short deadline (connection_limits.InboundGate). The remote IP of a WebSocket
    connection is read from trio-websocket (transport/websocket/connection.py
    P2PWebSocketConnection.get_remote_address() is a stub returning None).
12. `max_connections` also gates outbound dials (swarm.py `_dial_addr_single_attempt`, `add_conn`) and the
    pruner closes unprotected peers above the high watermark: `max_connections` = incoming limit + an outbound
    reserve, no pruning below it, and every peer we dial is protected in the swarm's tag store.
13. No per-connection stream limit in yamux or mplex (stream_muxer/yamux, stream_muxer/mplex; ConnectionConfig
    has no such field): inbound streams beyond the limit are reset.
Exercised end to end in tests/integration/waku/test_faults.py and test_connection_limits.py.
"""
from __future__ import annotations

import contextvars
import logging

import trio
from libp2p.network.config import ConnectionConfig
from libp2p.network.connection.raw_connection import RawConnection
from libp2p.network.exceptions import SwarmException
from libp2p.rcmgr import Direction

from core.waku.libp2p_patches.host import close_quietly

log = logging.getLogger(__name__)


def connection_config(limits) -> ConnectionConfig:
    """fix 12: py-libp2p's total cap = incoming limit + outbound reserve; the pruner never trims below it."""
    total = limits.max_connections
    return ConnectionConfig(max_connections=total, min_connections=0, low_watermark=total, high_watermark=total,
                            inbound_upgrade_timeout=limits.handshake_timeout_s)


_inbound_ticket: contextvars.ContextVar = contextvars.ContextVar("waku_inbound_ticket", default=None)


def _remote_ip(swarm, rwc) -> str:
    try:
        maddr = swarm._build_remote_multiaddr(rwc)
    except Exception:
        maddr = None
    if maddr is None:  # WebSocket: P2PWebSocketConnection.get_remote_address() is a stub returning None
        try:  # trio-websocket's stream: a SocketStream, or (shared port) a PeekableStream with .socket
            return str(rwc._ws_connection._stream.socket.getpeername()[0])
        except Exception:
            return "?"
    parts = str(maddr).split("/")
    return parts[2] if len(parts) > 2 else "?"


def conn_remote_ip(muxed_conn) -> str | None:
    """The remote IP of an incoming connection as the gate saw it at accept (None: one we dialled)."""
    return getattr(muxed_conn, "_waku_remote_ip", None)


def incoming_unprotected(swarm, is_protected) -> int:
    """Established incoming connections of peers that are not protected."""
    n = 0
    for peer, conns in swarm.connections.items():
        if is_protected(peer):
            continue
        n += sum(1 for c in conns if getattr(c, "direction", None) == Direction.INBOUND)
    return n


def install_connection_limits(swarm, gate) -> None:
    """fixes 11 and 13: our inbound handler (per connection slot, per-IP and handshake limits through `gate`,
    an `InboundGate`) and an inbound stream limit per connection."""
    upstream_add_conn = swarm.add_conn

    async def handle_inbound(rwc, maddr) -> None:
        ticket = gate.open(_remote_ip(swarm, rwc))
        if ticket is None:
            await close_quietly(rwc)
            return
        try:
            remote = swarm._build_remote_multiaddr(rwc)
            if remote is not None and not await swarm.connection_gate.is_allowed(remote):
                return
            with ticket.scope:
                _inbound_ticket.set(ticket)
                await swarm.upgrade_inbound_raw_conn(RawConnection(rwc, False), maddr)
                if ticket.conn is not None:
                    await ticket.conn.event_closed.wait()  # upstream waits for the swarm to stop (fix 11)
        except Exception as e:
            log.debug("incoming connection from %s: %s", ticket.ip, e)
        finally:
            gate.close(ticket)
            await close_quietly(rwc)

    async def add_conn(muxed_conn, direction="unknown"):
        ticket = _inbound_ticket.get()
        if direction != "inbound" or ticket is None or ticket.conn is not None:
            return await upstream_add_conn(muxed_conn, direction)
        if not gate.established(ticket, muxed_conn.peer_id):
            await close_quietly(muxed_conn)
            raise SwarmException("incoming connection limit reached")
        muxed_conn._waku_remote_ip = ticket.ip  # for the per-address rate limit (conn_remote_ip)
        ticket.conn = await upstream_add_conn(muxed_conn, direction)
        return ticket.conn

    upstream_stream_handler = swarm.common_stream_handler

    async def stream_handler(net_stream) -> None:
        conn = getattr(net_stream, "swarm_conn", None)
        if conn is not None:
            inbound = sum(1 for s in conn.streams if getattr(s, "_direction", None) == Direction.INBOUND)
            if inbound > gate.limits.max_streams_per_conn:
                gate.refused["streams"] += 1
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    try:
                        await net_stream.reset()
                    except Exception:
                        pass
                return
        await upstream_stream_handler(net_stream)

    swarm._handle_inbound_connection = handle_inbound
    swarm.add_conn = add_conn
    swarm.common_stream_handler = stream_handler

