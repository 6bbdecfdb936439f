"""A relay peer that stops reading must not stall the node (issue 21: the load benchmark's lightpush phase hung).

The stuck peer does what a stopped node with an open socket, or an attacker, does: it grants a large yamux
window on the node's relay stream to it and then reads nothing. The node's writer to it blocks in the socket
for good and its send queue grows. Before the fix every publish of the node waited for that queue, forever:
local publishes and every lightpush request. Now nothing waits for a queue that has stopped moving
(core/waku/libp2p_patches/sendq.py), and lightpush never waits for relay queues. And a peer whose queue stays stuck past
`NodeConfig.relay_send_deadline_s` is disconnected, with a logged reason, and its queued RPCs are released.
"""
import logging
import os
import re
import socket
import threading
import time

from libp2p.peer.id import ID

from core.waku.message import WakuMessage
from tests.integration.waku.conftest import Collector

PS = "/waku/2/rs/16/32"
CT = "/test/1/stall/proto"
HIGH_WATER = 4             # the node's back-pressure mark, lowered so that a few messages pass it
PAYLOAD = 128 * 1024       # enough to fill the loopback socket buffers with a few dozen messages
N_PUBLISH, N_LIGHTPUSH = 80, 20


def _msg(i: int) -> WakuMessage:
    return WakuMessage(os.urandom(PAYLOAD), CT, timestamp=time.time_ns() + i)


def _stop_reading(stuck, node_id: str) -> threading.Event:
    """Grant the node a 1 GiB window on every stream it opened to `stuck`, shrink stuck's receive buffer, then
    freeze stuck's event loop (nothing reads its socket) until the returned event is set."""
    async def open_wide():
        [conn] = stuck.node.host.get_network().get_connections(ID.from_base58(node_id))
        for s in list(conn.muxed_conn.streams.values()):
            if not s.is_initiator and not s.closed:
                await s.send_window_update(1 << 30)
        raw = conn.muxed_conn.secured_conn.conn.read_writer.read_write_closer
        raw.stream.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck._call(open_wide)

    inside, release = threading.Event(), threading.Event()

    def freeze():
        inside.set()
        release.wait(120)
    threading.Thread(target=stuck._sync, args=(freeze,), daemon=True).start()
    assert inside.wait(10)
    return release


def test_a_relay_peer_that_stops_reading_does_not_stall_publish_or_lightpush(make_node):
    node = make_node(ws_port=None, rate_exempt_ips=("127.0.0.1",))
    stuck = make_node(store=False, ws_port=None)
    client = make_node(store=False, ws_port=None, shards=(1,))   # a light client: relays another shard
    stuck.add_peer(node.listen_addrs[0])
    stuck.wait_for_relay_peer(node.peer_id)
    node.wait_for_relay_peer(stuck.peer_id)
    client.add_peer(node.listen_addrs[0])
    watch = node.node.pubsub.send_watch
    node._sync(setattr, watch, "high_water", HIGH_WATER)
    release = _stop_reading(stuck, node.peer_id)
    try:
        for i in range(N_PUBLISH):                 # local publishes: back-pressured, but not by a stuck peer
            node.publish(PS, _msg(i))
        queue = node._sync(lambda: node.node.pubsub.peer_queues[ID.from_base58(stuck.peer_id)])
        # the scenario happened: the stuck peer's queue is past the mark and not moving
        assert node._sync(lambda: len(queue) > HIGH_WATER and watch.stalled(queue))
        for i in range(N_LIGHTPUSH):               # remote peers' work never waits for relay queues
            r = client.lightpush(node.peer_id, PS, _msg(N_PUBLISH + i))
            assert r.status_code == 200, r.status_desc
        node.flush_store()
        assert node.config.store.count() == N_PUBLISH + N_LIGHTPUSH
    finally:
        release.set()


DEADLINE_S = 2.0           # the node's relay send deadline, lowered from 10 s


def test_a_relay_peer_that_stops_reading_is_disconnected_and_its_queue_released(make_node, caplog):
    node = make_node(ws_port=None, relay_send_deadline_s=DEADLINE_S)
    stuck = make_node(store=False, ws_port=None)
    healthy = make_node(store=False, ws_port=None)
    got = Collector()
    healthy.subscribe(PS, [CT], got)
    for peer in (stuck, healthy):
        peer.add_peer(node.listen_addrs[0])
        peer.wait_for_relay_peer(node.peer_id)
        node.wait_for_relay_peer(peer.peer_id)
    watch = node.node.pubsub.send_watch
    node._sync(setattr, watch, "high_water", HIGH_WATER)
    stuck_id = ID.from_base58(stuck.peer_id)
    caplog.set_level(logging.WARNING, logger="core.waku.node")
    queue = node._sync(lambda: node.node.pubsub.peer_queues[stuck_id])
    release = _stop_reading(stuck, node.peer_id)
    try:
        for i in range(N_PUBLISH):
            node.publish(PS, _msg(i))
        # the node drops the stuck peer once its queue has not moved for the deadline; healthy peers are kept
        node._call(node.node.wait_connections, lambda: stuck.peer_id not in node.node.connected_peers(), 30)
        reason = node.node.stuck_peers_dropped[stuck.peer_id]
        assert "has not moved" in reason or "full" in reason, reason
        [line] = [r.getMessage() for r in caplog.records if stuck.peer_id in r.getMessage()]
        assert line.startswith(f"relay: disconnecting {stuck.peer_id}: {reason}"), line
        freed = int(re.search(r"; (\d+) queued RPCs released", line).group(1))
        assert freed > HIGH_WATER            # it had piled up ...
        # ... and its memory is released at once: no RPC left in the queue, no queue kept for the peer (later
        # publishes queue nothing for it)
        assert node._sync(lambda: (len(queue), queue.closed)) == (0, True)
        assert node._sync(lambda: stuck_id not in node.node.pubsub.peer_queues)
        assert healthy.peer_id in node.connected_peers()
        for i in range(N_PUBLISH, N_PUBLISH + 10):
            node.publish(PS, _msg(i))
        items = got.wait_for(N_PUBLISH + 10, timeout=30)
        assert len({rm.hash for rm in items}) == N_PUBLISH + 10
        node.flush_store()
        assert node.config.store.count() == N_PUBLISH + 10
    finally:
        release.set()
