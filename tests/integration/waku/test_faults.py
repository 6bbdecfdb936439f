"""Faults: a port in use, a store node that never answers, a store node that vanishes mid-query, a peer that
resets the stream, does not serve the protocol or is gone. Every network failure reaches the caller as one
WakuPeerError (core/waku/errors.py), never as py-libp2p's own exception types."""
import socket
import time

import pytest
import trio

from core.waku import errors
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.errors import WakuError, WakuPeerError
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


@pytest.mark.timeout(60)            # a hang fails here; how long the refusal took is the bench's business
def test_store_node_that_never_answers_times_out(make_node):
    silent = make_node()

    async def never_answer(stream):
        await trio.sleep_forever()
    silent._sync(silent.node.host.set_stream_handler, STORE_V3_PROTOCOL, never_answer)
    client = make_node(store=False)
    client.call_timeout = 2.0
    with pytest.raises(WakuPeerError, match="no answer within 2 s") as e:
        list(client.query_store(silent.listen_addrs[0], [CT]))
    assert (e.value.kind, e.value.op, e.value.peer) == (errors.TIMEOUT, "store query", silent.peer_id)
    assert isinstance(e.value.__cause__, trio.TooSlowError)
    assert client.add_peer(silent.listen_addrs[0])  # the client still works afterwards


@pytest.mark.timeout(60)
def test_store_node_vanishing_mid_query_raises_instead_of_hanging(make_node):
    server = make_node()
    server.config.store.add_many((PS, WakuMessage(b"m%d" % i, CT, timestamp=i + 1)) for i in range(500))
    client = make_node(store=False)
    client.call_timeout = 10.0
    it = client.query_store(server.listen_addrs[0], [CT], page_size=100)
    first = [next(it) for _ in range(100)]
    assert first[-1].message.payload == b"m99"
    server.stop()
    # py-libp2p's words depend on whether the client has seen the connection close yet; the kind does not
    with pytest.raises(WakuPeerError, match="No valid connections|Failed to create stream to peer") as e:
        list(it)
    assert (e.value.kind, e.value.op, e.value.peer) == (errors.UNREACHABLE, "store query", server.peer_id)


def test_peer_that_resets_mid_exchange_is_a_closed_peer_error(make_node):
    server = make_node()
    got_request = []

    async def reset_after_reading(stream):
        got_request.append(await stream.read(1))
        await stream.reset()
    server._sync(server.node.host.set_stream_handler, STORE_V3_PROTOCOL, reset_after_reading)
    client = make_node(store=False)
    with pytest.raises(WakuPeerError, match="store query to 16Uiu2") as e:
        list(client.query_store(server.listen_addrs[0], [CT]))
    assert e.value.kind == errors.CLOSED and got_request, e.value
    assert e.value.peer == server.peer_id


def test_peer_without_the_protocol_is_an_unsupported_peer_error(make_node):
    no_store = make_node(store=False)
    client = make_node(store=False)
    with pytest.raises(WakuPeerError, match="does not serve the protocol") as e:
        list(client.query_store(no_store.listen_addrs[0], [CT]))
    assert e.value.kind == errors.UNSUPPORTED


def test_peer_that_went_away_fails_dial_lightpush_and_store_with_one_error_type(make_node):
    gone = make_node()
    addr, peer = gone.listen_addrs[0], gone.peer_id
    client = make_node(store=False)
    client.add_peer(addr)
    gone.stop()
    # the client notices the closed connection: woken by its swarm's disconnect notification, not by polling
    client._call(client.node.wait_connections, lambda: peer not in client.node.connected_peers(), 10.0)
    calls = {"dial": lambda: client.add_peer(addr),
             "lightpush": lambda: client.lightpush(peer, PS, WakuMessage(b"x", CT, timestamp=time.time_ns())),
             "store query": lambda: list(client.query_store(peer, [CT]))}
    for op, call in calls.items():
        with pytest.raises(WakuPeerError) as e:
            call()
        assert (e.value.op, e.value.kind) == (op, errors.UNREACHABLE), e.value
        assert e.value.peer in (addr, peer) and isinstance(e.value, WakuError)
    with pytest.raises(WakuPeerError, match="bad address") as e:
        client.add_peer("/ip4/1.2.3/tcp/1")
    assert e.value.kind == errors.BAD_ADDRESS


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
