"""Faults: a port in use, a store node that never answers, a store node that vanishes mid-query."""
import socket
import time

import pytest
from libp2p.network.exceptions import SwarmException
import trio

from core.waku.embedded import EmbeddedWakuBackend
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig
from core.waku.store_protocol import STORE_V3_PROTOCOL

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


def test_port_in_use_is_a_clear_start_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        b = EmbeddedWakuBackend(NodeConfig(tcp_port=port, ws_port=None))
        with pytest.raises(RuntimeError, match="failed to start"):
            b.start(timeout=20)
        b.stop()


def test_store_node_that_never_answers_times_out(make_node):
    silent = make_node()

    async def never_answer(stream):
        await trio.sleep_forever()
    silent._sync(silent.node.host.set_stream_handler, STORE_V3_PROTOCOL, never_answer)
    client = make_node(store=False)
    client.call_timeout = 2.0
    t = time.monotonic()
    with pytest.raises(trio.TooSlowError):
        list(client.query_store(silent.listen_addrs[0], [CT]))
    assert time.monotonic() - t < 10
    assert client.add_peer(silent.listen_addrs[0])  # the client still works afterwards


def test_store_node_vanishing_mid_query_raises_instead_of_hanging(make_node):
    server = make_node()
    server.config.store.add_many((PS, WakuMessage(b"m%d" % i, CT, timestamp=i + 1)) for i in range(500))
    client = make_node(store=False)
    client.call_timeout = 10.0
    it = client.query_store(server.listen_addrs[0], [CT], page_size=100)
    first = [next(it) for _ in range(100)]
    assert first[-1].message.payload == b"m99"
    server.stop()
    t = time.monotonic()
    with pytest.raises(SwarmException, match="No valid connections"):   # py-libp2p's error, not ours yet
        list(it)
    assert time.monotonic() - t < 15


def test_abusive_store_client_gets_429(make_node):
    from core.waku.embedded import StoreQueryError
    server = make_node(requests_per_s=0.001, request_burst=3)
    server.config.store.add_many((PS, WakuMessage(b"m%d" % i, CT, timestamp=i + 1)) for i in range(50))
    client = make_node(store=False)
    it = client.query_store(server.listen_addrs[0], [CT], page_size=10)
    with pytest.raises(StoreQueryError) as e:
        list(it)
    assert e.value.code == 429
    resp = client.lightpush(server.peer_id, PS, WakuMessage(b"x", CT, timestamp=1))
    assert resp.status_code == 429
