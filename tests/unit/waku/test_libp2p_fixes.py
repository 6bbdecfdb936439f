"""Regression tests of py-libp2p 0.8.1 workarounds 1-13 (core/waku/libp2p_patches/): each checks that our fix
removes the problem. The canaries (the upstream problem is still there) of 1-8 are in test_libp2p_patches.py, the
others here, named test_fixN_upstream_...; the registry in libp2p_patches/__init__.py lists them all."""
import hashlib

import pytest
import trio
import trio.testing
from libp2p import new_host
from libp2p.abc import INotifee
from libp2p.crypto.secp256k1 import create_new_key_pair
from libp2p.peer.id import ID
from libp2p.pubsub import rpc_queue
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11
from libp2p.pubsub.pb import rpc_pb2

from core.waku.libp2p_patches import records
from core.waku.libp2p_patches.framing import read_length_prefixed, write_length_prefixed
from core.waku.libp2p_patches.gossipsub import WAKU_RELAY_PROTOCOL, IdMessageCache, WakuGossipSub, waku_message_id
from core.waku.libp2p_patches.host import check_listening, disable_auto_connector, noise_only_security
from core.waku.libp2p_patches.pubsub import SEND_QUEUE_SIZE, WakuPubsub
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig, WakuNode
from core.varint import DecodeError

PEER = ID(b"\x00\x25" + bytes(37))


def test_fix1_relay_protocol_id_is_mapped_to_gossipsub_v11():
    ours = WakuGossipSub()
    ours.add_peer(PEER, WAKU_RELAY_PROTOCOL)
    assert ours.peer_protocol[PEER] == PROTOCOL_ID_V11
    assert ours.get_protocols() == [WAKU_RELAY_PROTOCOL]
    assert (ours.degree, ours.degree_low, ours.degree_high, ours.heartbeat_interval) == (6, 4, 8, 1)


def test_fix2_published_messages_carry_no_from_seqno_signature():
    received = []

    async def main():
        a = WakuNode(NodeConfig(ws_port=None))
        b = WakuNode(NodeConfig(ws_port=None))
        arrived = trio.Event()
        b.pubsub._on_message = lambda topic, pm: (received.append(pm), arrived.set())
        async with trio.open_nursery() as n:
            await n.start(a.run)
            await n.start(b.run)
            topic = a.config.topics()[0]
            await b.connect(f"{a.listen_addrs()[0]}")
            await b.wait_for_relay_peer(a.peer_id, topic)
            await a.wait_for_relay_peer(b.peer_id, topic)
            await a.publish(topic, WakuMessage(b"x", "/a/1/b/c", timestamp=1))
            with trio.fail_after(10):
                await arrived.wait()
            n.cancel_scope.cancel()
    trio.run(main)
    pm = received[0]
    assert pm.data and not pm.from_id and not pm.seqno and not pm.signature and not pm.key


def test_fix2_upstream_publish_still_sets_from_and_seqno():
    """Fails once py-libp2p's Pubsub.publish leaves `from`/`seqno` out without signing: then drop fix 2."""
    from libp2p.pubsub.pubsub import Pubsub
    pushed = []

    async def main():
        node = WakuNode(NodeConfig(ws_port=None))
        async with trio.open_nursery() as n:
            await n.start(node.run)

            async def capture(forwarder, msg):
                pushed.append(msg)
            node.pubsub.push_msg = capture
            await Pubsub.publish(node.pubsub, node.config.topics()[0], b"x")
            n.cancel_scope.cancel()
    trio.run(main)
    assert pushed[0].from_id and pushed[0].seqno  # js-waku drops such messages under StrictNoSign


def _unsigned(data):
    return rpc_pb2.Message(data=data, topicIDs=["t"])


def test_fix3_equivocation_check_disabled_for_unsigned_messages():
    ours = WakuGossipSub()
    assert ours._check_equivocation(_unsigned(b"a")) and ours._check_equivocation(_unsigned(b"b"))


def test_fix4_message_cache_keyed_by_waku_message_id():
    ours = IdMessageCache(3, 5)
    for d in (b"a", b"b", b"c"):
        ours.put(_unsigned(d))
    assert set(ours.window("t")) == {hashlib.sha256(d).digest() for d in (b"a", b"b", b"c")}
    assert ours.get(waku_message_id(_unsigned(b"b"))).data == b"b"
    assert isinstance(WakuGossipSub().mcache, IdMessageCache)


def test_fix5_no_silent_drops():
    q = rpc_queue.RpcQueue()
    assert all(q.push(rpc_pb2.RPC()) for _ in range(SEND_QUEUE_SIZE)) and not q.push(rpc_pb2.RPC())
    assert WakuGossipSub().spam_protection_enabled is False
    # delivery bypasses the 32-slot subscription channel: 100 messages reach the callback synchronously
    got = []
    fake = WakuPubsub.__new__(WakuPubsub)
    fake._on_message = lambda t, m: got.append(m)
    fake.subscribed_topics_receive = {"t": None}
    for i in range(100):
        fake.notify_subscriptions(_unsigned(b"%d" % i))
    assert len(got) == 100


class TrickleStream:
    """Returns at most `chunk` bytes per read, like mplex under load."""

    def __init__(self, data: bytes, chunk: int = 1000):
        self.data, self.chunk = data, chunk

    async def read(self, n: int = -1) -> bytes:
        out, self.data = self.data[:min(n, self.chunk)], self.data[min(n, self.chunk):]
        return out

    async def write(self, data: bytes) -> None:
        self.data += data


def test_fix6_length_prefixed_read_survives_many_partial_reads():
    body = bytes(range(256)) * 2000  # 512000 bytes in 1000-byte reads

    async def main():
        s = TrickleStream(b"")
        await write_length_prefixed(s, body)
        assert await read_length_prefixed(s, 1 << 20) == body
        s = TrickleStream(b"")
        await write_length_prefixed(s, body)
        with pytest.raises(DecodeError):
            await read_length_prefixed(s, 1000)  # size limit checked before reading the body
        with pytest.raises(DecodeError):
            await read_length_prefixed(TrickleStream(b"\xff" * 11), 1000)
        with pytest.raises(DecodeError):
            await read_length_prefixed(TrickleStream(b"\x05ab"), 1000)
    trio.run(main)


def test_fix7_noise_is_the_only_security_protocol():
    kp = create_new_key_pair()
    assert list(noise_only_security(kp)) == ["/noise"]
    node = WakuNode(NodeConfig(ws_port=None))
    offered = list(node.host.get_network().upgrader.security_multistream.transports)
    assert [str(p) for p in offered] == ["/noise"]


def test_fix8_auto_connector_disabled():
    kp = create_new_key_pair()
    host = new_host(key_pair=kp, sec_opt=noise_only_security(kp))
    called = []
    ac = host.get_network().auto_connector

    async def spy():
        called.append(1)
        return []
    ac._get_candidate_peers = spy
    ac._started = True
    disable_auto_connector(host)
    trio.run(ac.maybe_connect)
    assert called == []  # upstream looks for peerstore peers to dial (canary: test_libp2p_patches.py)


def test_fix9_sender_record_is_cached_per_host():
    from libp2p.pubsub import gossipsub as gmod
    from libp2p.pubsub import pubsub as pmod
    assert gmod.env_to_send_in_RPC is records.cached_env_to_send_in_RPC
    assert pmod.env_to_send_in_RPC is records.cached_env_to_send_in_RPC
    kp = create_new_key_pair()
    host = new_host(key_pair=kp, sec_opt=noise_only_security(kp))
    calls = []
    upstream = records._upstream_env_to_send
    records._upstream_env_to_send = lambda h: (calls.append(h), upstream(h))[1]
    try:
        first = [records.cached_env_to_send_in_RPC(host) for _ in range(100)]
    finally:
        records._upstream_env_to_send = upstream
    assert len(calls) == 1 and len({f[0] for f in first}) == 1 and first[0][0]


def test_fix9_upstream_still_marshals_the_record_on_every_rpc():
    """Fails once py-libp2p's env_to_send_in_RPC returns cached bytes: then drop fix 9."""
    kp = create_new_key_pair()
    host = new_host(key_pair=kp, sec_opt=noise_only_security(kp))
    records._upstream_env_to_send(host)  # issues and caches the record itself
    env = host.get_peerstore().get_local_record()
    marshals = []
    upstream_marshal = env.marshal_envelope
    env.marshal_envelope = lambda: (marshals.append(1), upstream_marshal())[1]
    for _ in range(5):
        records._upstream_env_to_send(host)
    assert len(marshals) == 5


def test_fix10_upstream_host_runs_without_an_address_it_could_not_bind():
    """Fails once py-libp2p's host.run raises on a port in use: then drop check_listening (fix 10)."""
    import socket
    import multiaddr

    async def main():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            want = multiaddr.Multiaddr(f"/ip4/127.0.0.1/tcp/{s.getsockname()[1]}")
            kp = create_new_key_pair()
            host = new_host(key_pair=kp, sec_opt=noise_only_security(kp))
            async with host.run([want]):  # upstream: only logged
                assert host.get_addrs() == []
                with pytest.raises(OSError, match="could not listen on /ip4/127.0.0.1/tcp/"):
                    check_listening(host, [want])
    trio.run(main)


class _SwarmWatch(INotifee):
    """A bare py-libp2p host's own connection notifications (sent after the swarm's books are updated) as a
    condition to wait on; our nodes have WakuNode.wait_connections for this."""

    def __init__(self, swarm):
        self._changed = trio.Event()
        swarm.register_notifee(self)

    def _touch(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def until(self, cond, timeout: float = 5.0) -> None:
        with trio.fail_after(timeout):
            while not cond():
                await self._changed.wait()

    async def connected(self, network, conn) -> None:
        self._touch()

    async def disconnected(self, network, conn) -> None:
        self._touch()

    async def opened_stream(self, network, stream) -> None:
        pass

    async def closed_stream(self, network, stream) -> None:
        pass

    async def listen(self, network, maddr) -> None:
        pass

    async def listen_close(self, network, maddr) -> None:
        pass


def test_fix11_upstream_keeps_the_inbound_slot_ours_releases_it():
    from libp2p.network.config import ConnectionConfig
    from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
    import multiaddr

    async def main():
        kp = create_new_key_pair()
        upstream = new_host(key_pair=kp, sec_opt=noise_only_security(kp), muxer_opt={YAMUX: Yamux},
                            connection_config=ConnectionConfig())
        disable_auto_connector(upstream)
        ours = WakuNode(NodeConfig(ws_port=None))
        client = WakuNode(NodeConfig(ws_port=None))
        async with trio.open_nursery() as n, upstream.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
            await n.start(ours.run)
            await n.start(client.run)
            up_swarm = upstream.get_network()
            up_addr = f"{upstream.get_addrs()[0]}"
            servers = ((up_addr, up_swarm, _SwarmWatch(up_swarm).until),
                       (ours.listen_addrs()[0], ours.host.get_network(), ours.wait_connections))
            for server_addr, server_swarm, wait in servers:
                server_id = ID.from_base58(server_addr.split("/p2p/")[1])
                await client.connect(server_addr)
                await wait(lambda: len(server_swarm.get_connections()) == 1)
                # the client's own follow-ups on a new connection (metadata, relay stream) run to their end first:
                # one still under way when we disconnect would dial the server again (py-libp2p opens a new
                # connection for a stream to a peer that is gone)
                await trio.testing.wait_all_tasks_blocked()
                await client.host.disconnect(server_id)
                await wait(lambda: not server_swarm.get_connections())
            # upstream: the slot stays taken for the swarm's life (250 connections and no more, ever), even once
            # every task has run its course after the close
            await trio.testing.wait_all_tasks_blocked()
            assert up_swarm._inbound_limiter.borrowed_tokens == 1
            assert up_swarm._inbound_limiter.total_tokens == 250
            # ours: the connection's slot (and its per-IP count) goes with it
            await ours.gate.wait_until(lambda: ours.gate.stats()["per_ip"] == {}, 5)
            assert ours.gate.admitted == 1 and ours.gate.stats()["incoming"] == 0
            n.cancel_scope.cancel()
    trio.run(main)


def test_fix11_per_ip_and_handshake_limits_in_the_gate():
    from core.waku.connection_limits import ConnectionLimits, InboundGate

    async def main():
        gate = InboundGate(ConnectionLimits(max_incoming_per_ip=2, max_handshakes=3, max_incoming=1),
                           is_protected=lambda p: p == "friend", count_incoming=lambda: 1)
        a1, a2 = gate.open("10.0.0.1"), gate.open("10.0.0.1")
        assert a1 and a2 and gate.open("10.0.0.1") is None  # third socket from one IP
        b1 = gate.open("10.0.0.2")
        c1 = gate.open("10.0.0.3")  # a fourth handshake evicts the oldest
        assert a1.scope.cancel_called and not a2.scope.cancel_called and len(gate.handshaking) == 3
        assert gate.established(b1, "friend")  # protected: admitted although incoming is full
        assert not gate.established(c1, "stranger")
        for t in (a1, a2, b1, c1):
            gate.close(t)
        assert gate.per_ip == {} and gate.refused == {"per ip": 1, "handshake evicted": 1, "incoming full": 1,
                                                     "handshake failed": 1}  # a2 closed mid-handshake
    trio.run(main)


def test_fix12_outbound_reserve_and_dialled_peers_are_protected():
    from dataclasses import fields
    from libp2p.network.config import ConnectionConfig
    from core.waku.connection_limits import ConnectionLimits
    from core.waku.libp2p_patches.connections import connection_config
    up = ConnectionConfig()
    assert (up.max_connections, up.min_connections, up.inbound_upgrade_timeout) == (300, 50, 10.0)  # upstream
    cfg = connection_config(ConnectionLimits(max_incoming=10, outbound_reserve=5, handshake_timeout_s=2))
    assert (cfg.max_connections, cfg.min_connections, cfg.low_watermark, cfg.high_watermark) == (15, 0, 15, 15)
    assert cfg.inbound_upgrade_timeout == 2

    async def main():
        a = WakuNode(NodeConfig(ws_port=None))
        b = WakuNode(NodeConfig(ws_port=None, protected_peers=(a.peer_id,)))
        async with trio.open_nursery() as n:
            await n.start(a.run)
            await n.start(b.run)
            assert b.host.get_network().is_protected(ID.from_base58(a.peer_id))  # configured
            await a.connect(b.listen_addrs()[0])
            assert a.host.get_network().is_protected(ID.from_base58(b.peer_id))  # dialled
            n.cancel_scope.cancel()
    trio.run(main)
    assert not [f.name for f in fields(ConnectionConfig) if f.name.startswith(("max_streams", "max_inbound_str"))]


def test_fix12_upstream_max_connections_still_blocks_our_own_dials():
    """Fails once py-libp2p keeps room for outbound dials when incoming ones fill max_connections: then the
    outbound reserve of fix 12 can go."""
    import multiaddr
    from libp2p.network.config import ConnectionConfig
    from libp2p.network.exceptions import SwarmException
    from libp2p.peer.peerinfo import info_from_p2p_addr

    async def main():
        kp = create_new_key_pair()
        upstream = new_host(key_pair=kp, sec_opt=noise_only_security(kp),
                            connection_config=ConnectionConfig(max_connections=1, min_connections=0,
                                                               low_watermark=1, high_watermark=1))
        disable_auto_connector(upstream)
        stranger, friend = WakuNode(NodeConfig(ws_port=None)), WakuNode(NodeConfig(ws_port=None))
        async with trio.open_nursery() as n, upstream.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
            await n.start(stranger.run)
            await n.start(friend.run)
            watch = _SwarmWatch(upstream.get_network())
            await stranger.connect(f"{upstream.get_addrs()[0]}")
            await watch.until(lambda: len(upstream.get_network().get_connections()) == 1)
            with pytest.raises(SwarmException):  # the one incoming stranger leaves no room to dial a friend
                await upstream.connect(info_from_p2p_addr(multiaddr.Multiaddr(friend.listen_addrs()[0])))
            n.cancel_scope.cancel()
    trio.run(main)


def test_fix13_inbound_streams_per_connection_are_limited():
    from core.waku.connection_limits import ConnectionLimits
    proto = "/test/hold/1"

    async def main():
        a = WakuNode(NodeConfig(ws_port=None, limits=ConnectionLimits(max_streams_per_conn=4)))
        b = WakuNode(NodeConfig(ws_port=None))
        held, opened, failed = [], [], []
        release = trio.Event()

        async def hold(stream):
            held.append(stream)
            await release.wait()
        a.host.set_stream_handler(proto, hold)

        async def open_one():
            try:
                opened.append(await b.host.new_stream(ID.from_base58(a.peer_id), [proto]))
            except Exception:
                failed.append(1)
        async with trio.open_nursery() as n:
            await n.start(a.run)
            await n.start(b.run)
            await b.connect(a.listen_addrs()[0])
            async with trio.open_nursery() as opens:
                for _ in range(10):
                    opens.start_soon(open_one)
            assert 0 < len(held) <= 4 and len(failed) >= 6 and a.gate.refused["streams"] >= 6
            release.set()
            n.cancel_scope.cancel()
    trio.run(main)


def test_fix13_upstream_accepts_any_number_of_inbound_streams():
    """Fails once py-libp2p limits inbound streams per connection by itself: then drop fix 13."""
    import multiaddr
    from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
    proto, n_streams = "/test/hold/1", 100

    async def main():
        kp = create_new_key_pair()
        upstream = new_host(key_pair=kp, sec_opt=noise_only_security(kp), muxer_opt={YAMUX: Yamux})
        disable_auto_connector(upstream)
        held = []
        release, all_held = trio.Event(), trio.Event()

        async def hold(stream):
            held.append(stream)
            if len(held) == n_streams:
                all_held.set()
            await release.wait()
        upstream.set_stream_handler(proto, hold)
        client = WakuNode(NodeConfig(ws_port=None))
        async with trio.open_nursery() as n, upstream.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
            await n.start(client.run)
            await client.connect(f"{upstream.get_addrs()[0]}")
            async with trio.open_nursery() as opens:
                for _ in range(n_streams):
                    opens.start_soon(client.host.new_stream, ID.from_base58(upstream.get_id().pretty()), [proto])
            with trio.fail_after(5):
                await all_held.wait()
            release.set()
            n.cancel_scope.cancel()
    trio.run(main)


def test_fix11_websocket_connections_are_counted_by_their_ip():
    async def main():
        a, b = WakuNode(NodeConfig()), WakuNode(NodeConfig())
        async with trio.open_nursery() as n:
            await n.start(a.run)
            await n.start(b.run)
            await b.connect(next(x for x in a.listen_addrs() if "/ws" in x))
            await a.gate.wait_until(lambda: a.gate.stats()["per_ip"] == {"127.0.0.1": 1}, 5)
            await a.wait_connections(lambda: bool(a.host.get_network().get_connections()), 5)
            ws = a.host.get_network().get_connections()[0].muxed_conn.secured_conn.conn.conn.stream
            assert type(ws).__name__ == "P2PWebSocketConnection"
            assert ws.get_remote_address() is None  # upstream's stub; fails once it is implemented
            n.cancel_scope.cancel()
    trio.run(main)
