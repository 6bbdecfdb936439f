"""Fix 35 (registry: __init__.py): the resource manager parses a peer ID string on every stream.

py-libp2p 0.8.1's `SwarmConn._handle_muxed_stream` passes `str(peer_id)` to `ResourceManager.acquire_stream`, which
turns it back into an ID (`ID.from_string`: a base58 decode in pure Python, ~8 us unprofiled, 4 % of the node's
profiled CPU under a lightpush flood) only to ask the allowlist about it. `acquire_stream` here hands upstream the
ID parsed once per string (a small LRU: fresh peer IDs are free to make, so the cache is bounded); a string that
does not parse goes to upstream as it was, which treats it as not allowlisted, as before.
"""
from __future__ import annotations

from functools import lru_cache

from libp2p.peer.id import ID
from libp2p.rcmgr.manager import ResourceManager

UPSTREAM_ACQUIRE_STREAM = ResourceManager.acquire_stream
CACHED_IDS = 1024


@lru_cache(maxsize=CACHED_IDS)
def parsed(peer_id: str) -> ID:
    return ID.from_string(peer_id)


def acquire_stream(self: ResourceManager, peer_id, direction) -> bool:
    if isinstance(peer_id, str) and peer_id:
        try:
            peer_id = parsed(peer_id)
        except Exception:  # noqa: BLE001 - upstream's own parse fails the same way: not allowlisted
            pass
    return UPSTREAM_ACQUIRE_STREAM(self, peer_id, direction)


def install_parsed_peer_ids() -> None:
    ResourceManager.acquire_stream = acquire_stream
