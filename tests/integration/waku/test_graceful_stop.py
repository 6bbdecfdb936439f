"""A node's stop closes its connections while it still runs (WakuNode.run, EmbeddedWakuBackend.stop): a WebSocket
close waits for the peer's answer, which only the connection's reader task (in the swarm's nursery) can receive.
When the stop cancelled everything first, that reader was gone and every stop with a WebSocket connection waited
out fix 17's 2 s bound (the user's Quit, every test teardown). Real nodes on 127.0.0.1."""
import threading
import time

from core.waku.message import WakuMessage

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


def test_stop_closes_a_websocket_connection_within_its_bound_and_the_peer_sees_it(make_node):
    server = make_node()
    client = make_node(store=False)
    assert client.add_peer(server.ws_addr()) == server.peer_id
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"hi", CT, timestamp=time.time_ns())).status_code == 200
    assert client.peer_id in server.connected_peers()
    gone = threading.Event()
    server.node.host.get_network().register_notifee(_OnDisconnect(client.peer_id, gone))
    client.stop()
    assert client.node.closed_in_time is True      # before: False, the close handshake cut off at 2 s
    assert gone.wait(10), "the server never saw the client's connection close"
    assert client.peer_id not in server.connected_peers()


def test_stop_before_the_node_serves_still_ends_the_thread(make_node):
    node = make_node(store=False)
    node.node._stop_requested = None               # as before run() has started serving: cancelled at once
    thread = node._thread
    node.stop(timeout=10)
    assert not thread.is_alive()


class _OnDisconnect:
    """A swarm notifee (py-libp2p's INotifee shape) that sets `event` when `peer_id`'s connection closes."""

    def __init__(self, peer_id: str, event: threading.Event):
        self.peer_id, self.event = peer_id, event

    async def disconnected(self, network, conn) -> None:
        if conn.muxed_conn.peer_id.pretty() == self.peer_id:
            self.event.set()

    async def connected(self, network, conn) -> None: ...
    async def opened_stream(self, network, stream) -> None: ...
    async def closed_stream(self, network, stream) -> None: ...
    async def listen(self, network, multiaddr) -> None: ...
    async def listen_close(self, network, multiaddr) -> None: ...
