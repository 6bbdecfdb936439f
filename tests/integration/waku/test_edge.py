"""The node at the edge, tried as an attacker would on 127.0.0.1: far-future timestamps over relay and lightpush,
oversize requests (answered with the protocol's error, not a silently closed stream) and streams that never
send (reset after the read deadline). Clocks are injected; waits are on events with timeouts, never sleeps."""
import logging
import time

import pytest
import trio

from core.pb import waku_store_v3_pb2 as v3pb
from core.waku import lightpush, metadata, store_protocol
from core.waku.libp2p_patches.framing import write_length_prefixed
from core.waku.message import NS, WakuMessage
from tests.integration.waku.conftest import Collector

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"
T = time.time_ns()
HOUR = 3600 * NS


def test_lightpush_with_a_timestamp_an_hour_ahead_gets_420_and_the_reason(make_node):
    server = make_node(clock=lambda: T)
    client = make_node(store=False)
    client.add_peer(server.listen_addrs[0])
    resp = client.lightpush(server.peer_id, PS, WakuMessage(b"later", CT, timestamp=T + HOUR))
    assert (resp.status_code, resp.status_desc) == (420, "timestamp 3600 s in the future (limit 20 s)")
    resp = client.lightpush(server.peer_id, PS, WakuMessage(b"neg", CT, timestamp=-1))
    assert (resp.status_code, resp.status_desc) == (420, "negative timestamp")
    resp = client.lightpush(server.peer_id, PS, WakuMessage(b"now", CT, timestamp=T + 5 * NS))
    assert resp.status_code == 200
    server.flush_store()
    assert [r.message.payload for r in server.query_store(None, [CT])] == [b"now"]


def test_relay_drops_far_future_messages_and_keeps_the_rest(make_node):
    a = make_node(store=False, max_future_s=1e12)  # a sender whose own limit lets it publish anything
    b = make_node(clock=lambda: T)
    got = Collector()
    b.subscribe(PS, [CT], got)
    b.add_peer(a.listen_addrs[0])
    b.wait_for_relay_peer(a.peer_id)
    a.wait_for_relay_peer(b.peer_id)
    a.publish(PS, WakuMessage(b"from 2125", CT, timestamp=T + 100 * 365 * 24 * HOUR))
    ok = a.publish(PS, WakuMessage(b"normal", CT, timestamp=T))
    assert [r.hash for r in got.wait_for(1)] == [ok]  # same stream, in order: the far one was seen first
    assert b.node.validator.rejected["future timestamp"] == 1
    b.flush_store()
    assert [r.message.payload for r in b.query_store(None, [CT])] == [b"normal"]


def test_two_mib_lightpush_gets_413_with_its_size_and_the_connection_still_works(make_node):
    server = make_node()
    client = make_node(store=False)
    client.add_peer(server.listen_addrs[0])
    resp = client.lightpush(server.peer_id, PS, WakuMessage(b"x" * (2 * 1024 * 1024), CT, timestamp=T))
    assert resp.status_code == 413
    assert resp.status_desc.startswith("request is 209") and resp.status_desc.endswith(
        f"bytes (max {1024 * 1024 + lightpush.REQUEST_OVERHEAD})")
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"small", CT, timestamp=T)).status_code == 200


def test_lightpush_size_limit_follows_the_configured_message_size(make_node):
    server = make_node(max_message_size=4096)
    client = make_node(store=False)
    client.add_peer(server.listen_addrs[0])
    m = WakuMessage(b"x" * 5000, CT, timestamp=T)
    resp = client.lightpush(server.peer_id, PS, m)
    assert (resp.status_code, resp.status_desc) == (413, f"message is {len(m.encode())} bytes (max 4096)")
    resp = client.lightpush(server.peer_id, PS, WakuMessage(b"x" * 70_000, CT, timestamp=T))  # over 4096 + 64 KiB
    assert resp.status_code == 413 and resp.status_desc.startswith("request is ")


def test_oversize_store_request_gets_400_with_its_size(make_node):
    server = make_node()
    client = make_node(store=False)
    peer = client.add_peer(server.listen_addrs[0])
    req = v3pb.StoreQueryRequest(request_id="big", message_hashes=[bytes([i % 256]) * 32 for i in range(9000)])
    resp = client._call(client.node.store_query_v3, peer, req)
    assert resp.status_code == 400
    assert resp.status_desc == f"request is {req.ByteSize()} bytes (max {store_protocol.MAX_REQUEST})"
    assert list(client.query_store(server.listen_addrs[0], [CT])) == []  # still served afterwards


EXCHANGES = {store_protocol.STORE_V3_PROTOCOL: "store v3", store_protocol.STORE_V2_PROTOCOL: "store v2",
             lightpush.LIGHTPUSH_V3_PROTOCOL: "lightpush v3", lightpush.LIGHTPUSH_V2_PROTOCOL: "lightpush v2",
             metadata.METADATA_PROTOCOL: "metadata"}


@pytest.mark.parametrize("protocol", list(EXCHANGES))
@pytest.mark.parametrize("partial", [False, True], ids=["silent", "half-a-frame"])
def test_a_stream_that_never_sends_is_reset_after_the_deadline(make_node, protocol, partial, caplog):
    caplog.set_level(logging.INFO, logger="core.waku.edge_streams")
    server = make_node(read_timeout_s=0.5)
    client = make_node(store=False)
    peer = client.add_peer(server.listen_addrs[0])

    async def open_and_wait_for_the_server_to_end_it():
        from libp2p.peer.id import ID
        stream = await client.node.host.new_stream(ID.from_base58(peer), [protocol])
        if partial:
            await stream.write(b"\x64" + b"y" * 10)  # announces 100 bytes, sends 10
        with trio.fail_after(5):
            try:
                return await stream.read(1)
            except Exception as e:  # noqa: BLE001 - a reset is one way of being ended
                return type(e).__name__

    ended = client._call(open_and_wait_for_the_server_to_end_it)
    assert ended in (b"", "StreamReset", "StreamEOF", "StreamError", "StreamClosed")
    # it was the deadline that ended it: the server says so (logged before its reset; not a wall-time check, the
    # server's deadline starts before the client's side of the stream is ready)
    said = [r.getMessage() for r in caplog.records if r.name == "core.waku.edge_streams"]
    assert [m for m in said if m.startswith(f"{EXCHANGES[protocol]}: reset a stream from ")
            and m.endswith(": no progress within 0.5 s")], said
    assert peer in client.connected_peers()  # only the stream, not the connection


def test_default_deadline_keeps_a_slow_but_live_client_served(make_node):
    server = make_node()
    client = make_node(store=False)
    peer = client.add_peer(server.listen_addrs[0])

    async def slow_request():
        from libp2p.peer.id import ID
        stream = await client.node.host.new_stream(ID.from_base58(peer), [store_protocol.STORE_V3_PROTOCOL])
        data = v3pb.StoreQueryRequest(request_id="slow", content_topics=[CT]).SerializeToString()
        await write_length_prefixed(stream, data)
        with trio.fail_after(10):
            return await stream.read(4096)

    assert client._call(slow_request)  # answered (well within the 10 s default)
