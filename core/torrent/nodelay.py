"""TCP_NODELAY on libtorrent's peer sockets (Linux; elsewhere a no-op).

libtorrent never turns Nagle's algorithm off on its TCP peer connections, and has no setting for it. Between two
such peers every small message sent while earlier bytes are unacknowledged (interested, a request, the 13-byte
header sent before a block) waits for the other side's delayed ACK, 40 ms on Linux. On 127.0.0.1 a 600 KB fetch
then took 0.8 s instead of 6 ms, and a large one ran at ~800 KB/s until libtorrent's request queue grew.

So the service sets the option itself, on the sockets that are libtorrent's: the listening socket (Linux copies the
option to every connection it accepts) and each outgoing connection, found among this process's descriptors by
its endpoints. Only sockets matching those endpoints are touched, and only ever with this one option.
"""
from __future__ import annotations

import os
import socket

_FD_DIR = "/proc/self/fd"


def _endpoint(addr) -> tuple[str, int] | None:
    return (addr[0], int(addr[1])) if isinstance(addr, tuple) and len(addr) >= 2 else None


def set_nodelay(local_ports: set[int], remotes: set[tuple[str, int]]) -> int:
    """Set TCP_NODELAY on this process's TCP sockets bound to one of `local_ports` (a listener and what it
    accepted) or connected to one of `remotes`. Returns how many sockets match (set now or before)."""
    if not os.path.isdir(_FD_DIR) or socket.getdefaulttimeout() is not None:
        return 0   # a default timeout would make socket(fileno=) switch the descriptor to non-blocking: leave it
    n = 0
    for name in os.listdir(_FD_DIR):
        try:
            if not os.readlink(f"{_FD_DIR}/{name}").startswith("socket:"):
                continue
            s = socket.socket(fileno=int(name))
        except (OSError, ValueError):   # closed meanwhile, or not a socket after all
            continue
        try:
            if s.type != socket.SOCK_STREAM or s.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            local = _endpoint(s.getsockname())
            try:
                remote = _endpoint(s.getpeername())
            except OSError:   # not connected (a listener, or a connect still under way)
                remote = None
            if (local is not None and local[1] in local_ports) or (remote is not None and remote in remotes):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                n += 1
        except OSError:
            continue
        finally:
            s.detach()   # never close: the descriptor is libtorrent's
    return n
