"""Fixes 7, 8, 10 and 17: what a py-libp2p host does by default that a Waku node must not.

7. The default host accepts plaintext, secio and TLS (host defaults when sec_opt is not given): Noise only.
8. The swarm's auto-connector dials up to ~150 peers from the peerstore whenever it has fewer connections
   than min_connections (network/auto_connector.py AutoConnector.maybe_connect; including peers we
   disconnected for a cluster mismatch): disabled per host.
10. A listener that cannot bind (port in use) is only logged and the host runs without that address
    (network/swarm.py Swarm.listen): check_listening() turns it into an error.
17. A stopped host leaves its connections' sockets open: Swarm.run's shutdown (network/swarm.py, the `finally`
    after `manager.wait_finished()`) closes each connection with an `await` inside the cancelled scope, so the
    first checkpoint raises Cancelled and no socket is closed until garbage collection. The peer still sees a
    live connection that never reads; its relay send queue to us fills. close_connections() closes them,
    shielded and bounded, before the host exits (WakuNode.run).
"""
from __future__ import annotations

import logging

import trio
from libp2p.crypto.keys import KeyPair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_PROTOCOL_ID
from libp2p.security.noise.transport import Transport as NoiseTransport

log = logging.getLogger(__name__)


def noise_only_security(key_pair: KeyPair) -> dict:
    """fix 7: Noise is the only security protocol offered or accepted."""
    return {NOISE_PROTOCOL_ID: NoiseTransport(key_pair, noise_privkey=new_x25519().private_key)}



def disable_auto_connector(host) -> None:
    """fix 8: no automatic dialling of peerstore peers; the node decides whom to connect to."""
    async def _no_dials() -> None:
        return None
    host.get_network().auto_connector.maybe_connect = _no_dials


def check_listening(host, requested) -> None:
    """fix 10: raise OSError unless every requested transport (TCP, WebSocket) got a listen address."""
    have = [str(a) for a in host.get_addrs()]
    for want in requested:
        ws = "/ws" in str(want)
        if not any(("/ws" in a) == ws and "/tcp/" in a for a in have):
            raise OSError(f"could not listen on {want} (address in use?)")


async def close_quietly(closer) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(2):
        try:
            await closer.close()
        except Exception:
            pass



async def close_connections(swarm, timeout_s: float = 2.0, peer_id=None) -> bool:
    """fix 17: close every connection's socket (or only `peer_id`'s: a stuck relay peer, sendq.py),
    shielded (the node may be being cancelled) and bounded, so that its peers see it go. The socket, not the
    muxer: a graceful yamux close waits for the connection's write lock, which a writer stuck on a peer that
    reads nothing holds forever. False when the bound cut it short (a WebSocket's close waits for the peer's
    answer, which only its reader task, in the swarm's nursery, can receive: WakuNode.run closes before it
    cancels anything)."""
    with trio.CancelScope(shield=True), trio.move_on_after(timeout_s) as bound:
        for pid, conns in list(swarm.connections.items()):
            if peer_id is not None and pid != peer_id:
                continue
            for conn in list(conns):
                try:
                    await conn.muxed_conn.secured_conn.close()
                except Exception as e:  # noqa: BLE001 - already closed or broken: nothing left to release
                    log.debug("closing a connection at stop: %s", e)
    return not bound.cancel_called   # (not cancelled_caught: a WebSocket close turns the Cancelled into its own error)

