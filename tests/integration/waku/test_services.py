"""Lightpush v3/v2, metadata cluster checks, persisted identity, retention on a running node."""
import os
import stat
import time


from core.pb import waku_lightpush_pb2 as lpb
from core.waku import lightpush
from core.waku.identity import load_or_create_identity, peer_id_of
from core.waku.message import WakuMessage
from core.waku.store_db import DAY_NS
from core.waku.store_protocol import _roundtrip
from libp2p.peer.id import ID
from tests.integration.waku.conftest import Collector

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


def test_lightpush_v3_publishes_and_reports_errors(make_node):
    server, relay_peer, client = make_node(), make_node(store=False), make_node(store=False)
    relay_peer.add_peer(server.listen_addrs[0])
    relay_peer.wait_for_relay_peer(server.peer_id)
    got = Collector()
    relay_peer.subscribe(PS, [CT], got)
    client.add_peer(server.listen_addrs[0])
    server.wait_for_relay_peer(client.peer_id)      # add_peer returns once connected, before relay's exchange
    msg = WakuMessage(b"pushed", CT, timestamp=time.time_ns())
    resp = client.lightpush(server.peer_id, PS, msg)
    assert (resp.status_code, resp.status_desc, resp.relay_peer_count) == (200, "OK", 2)  # relay_peer and client are both relay peers
    assert got.wait_for(1)[0].hash == msg.hash(PS)
    assert client.lightpush(server.peer_id, "/waku/2/rs/99/1", msg).status_code == 421
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"", CT, timestamp=1)).status_code == 420
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"x", "bad topic", timestamp=1)).status_code == 420
    big = WakuMessage(b"x" * (1024 * 1024), CT, timestamp=1)  # over the 1 MiB default
    assert client.lightpush(server.peer_id, PS, big).status_code == 413
    # no pubsub topic: the node's first shard
    assert client.lightpush(server.peer_id, None, WakuMessage(b"t", CT, timestamp=5)).status_code == 200
    server.flush_store()
    assert server.config.store.count() == 2


def test_lightpush_legacy_v2_server(make_node):
    server, client = make_node(), make_node(store=False)
    client.add_peer(server.listen_addrs[0])
    from core.waku.store_query import to_pb
    rpc = lpb.PushRpc(request_id="r1")
    rpc.request.pubsub_topic = PS
    rpc.request.message.CopyFrom(to_pb(WakuMessage(b"legacy", CT, timestamp=time.time_ns())))

    async def push():
        stream_peer = ID.from_base58(server.peer_id)
        return await _roundtrip(client.node.host, stream_peer, lightpush.LIGHTPUSH_V2_PROTOCOL,
                                rpc.SerializeToString())
    out = lpb.PushRpc.FromString(client._call(push))
    assert out.request_id == "r1" and out.response.is_success
    server.flush_store()
    assert server.config.store.count() == 1


def test_metadata_disconnects_other_cluster(make_node):
    ours, other = make_node(store=False), make_node(store=False, cluster_id=1, shards=(0,))
    same = make_node(store=False)
    same.add_peer(ours.listen_addrs[0])
    other.add_peer(ours.listen_addrs[0])
    ours._call(ours.node.wait_rejected, other.peer_id, 10)
    assert same.peer_id not in ours.node.metadata_rejected
    assert same.peer_id in ours.connected_peers()


def test_identity_is_persisted_with_mode_0600(tmp_path, make_node):
    key = tmp_path / "node.key"
    a = make_node(store=False, key_path=key)
    pid = a.peer_id
    assert pid.startswith("16Uiu2")
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    a.stop()
    assert peer_id_of(load_or_create_identity(key)) == pid
    assert make_node(store=False, key_path=key).peer_id == pid


def test_retention_drops_old_messages_on_running_node(make_node):
    clock = {"t": time.time_ns()}
    s = make_node(store_kw={"clock": lambda: clock["t"]})
    q = make_node(store=False)
    s.config.store.add(PS, WakuMessage(b"old", CT, timestamp=1))
    clock["t"] += 29 * DAY_NS
    s.config.store.add(PS, WakuMessage(b"recent", CT, timestamp=2))
    clock["t"] += 2 * DAY_NS
    assert s.config.store.prune() == 1
    assert [r.message.payload for r in q.query_store(s.listen_addrs[0], [CT])] == [b"recent"]


def test_ping_and_identify_advertise_our_protocols(make_node):
    from libp2p.host.ping import ID as PING, perform_ping_roundtrip
    a, b = make_node(), make_node(store=False)
    b.add_peer(a.ws_addr())
    pid = ID.from_base58(a.peer_id)

    async def ping_and_identify():
        stream = await b.node.host.new_stream(pid, [PING])
        rtt = await perform_ping_roundtrip(stream)
        await stream.close()
        await b.node.host._identify_peer(pid, reason="test")
        return rtt, set(b.node.host.get_peerstore().get_protocols(pid))
    _rtt, protocols = b._call(ping_and_identify)      # the ping itself raises if the echo does not match
    assert {"/vac/waku/relay/2.0.0", "/vac/waku/store-query/3.0.0", "/vac/waku/store/2.0.0-beta4",
            "/vac/waku/metadata/1.0.0", "/vac/waku/lightpush/3.0.0", "/vac/waku/lightpush/2.0.0-beta1",
            "/ipfs/id/1.0.0", "/ipfs/ping/1.0.0"} <= protocols
