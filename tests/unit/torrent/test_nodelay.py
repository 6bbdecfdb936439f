"""core.torrent.nodelay on real sockets: only the sockets matching the given endpoints get TCP_NODELAY."""
from __future__ import annotations

import socket

import pytest

from core.torrent.nodelay import set_nodelay


def _nodelay(s: socket.socket) -> int:
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


@pytest.fixture
def pair():
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    other = socket.create_server(("127.0.0.1", 0))      # a socket of someone else in this process
    yield listener, client, accepted, other
    for s in (listener, client, accepted, other):
        s.close()


def test_listener_and_what_it_accepted_by_local_port(pair):
    listener, client, accepted, other = pair
    assert [_nodelay(s) for s in pair] == [0, 0, 0, 0]
    assert set_nodelay({listener.getsockname()[1]}, set()) == 2
    assert (_nodelay(listener), _nodelay(accepted), _nodelay(client), _nodelay(other)) == (1, 1, 0, 0)
    # Linux copies the option from the listener to the connections it accepts afterwards
    late = socket.create_connection(listener.getsockname())
    late_accepted, _ = listener.accept()
    try:
        assert _nodelay(late_accepted) == 1 and _nodelay(late) == 0
    finally:
        late.close()
        late_accepted.close()


def test_outgoing_connection_by_remote_endpoint(pair):
    listener, client, accepted, other = pair
    assert set_nodelay(set(), {("127.0.0.1", listener.getsockname()[1])}) == 1
    assert (_nodelay(client), _nodelay(listener), _nodelay(accepted), _nodelay(other)) == (1, 0, 0, 0)


def test_nothing_matching_touches_nothing_and_closes_nothing(pair):
    assert set_nodelay({1}, {("127.0.0.1", 1)}) == 0
    assert [_nodelay(s) for s in pair] == [0, 0, 0, 0]
    listener, client, accepted, _ = pair
    client.sendall(b"x")                     # the descriptors are still open and usable
    assert accepted.recv(1) == b"x"
