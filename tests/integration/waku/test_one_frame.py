"""Fixes 30 and 31 between real nodes on 127.0.0.1: a store query and a lightpush request are answered in one yamux
frame (the stream's ACK aside) carrying the multistream echo, the answer and the FIN; a client that waits for the
echo before sending its request still gets it first; a request the server does not answer still ends with the
echo and a FIN (negotiation succeeded, then end of stream)."""
import struct
import time

import trio
from libp2p.peer.id import ID
from libp2p.stream_muxer.yamux import yamux as Y

from core.pb import waku_store_v2beta4_pb2 as v2pb
from core.waku import lightpush, store_protocol
from core.waku.libp2p_patches import yamux
from core.waku.libp2p_patches.framing import read_length_prefixed, write_length_prefixed
from core.waku.message import WakuMessage

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"
MULTISTREAM = b"/multistream/1.0.0\n"


def _settled(client, server, timeout: float = 10.0) -> None:
    """Wait until the connection's set-up is over: each side has opened its three streams (identify, metadata,
    relay) and only the two relay streams are still open. add_peer returns as soon as the connection is up
    (libp2p fix 38), while these streams are still being opened and answered."""
    def quiet(side, other, opened: int):
        async def wait():
            with trio.fail_after(timeout):
                while True:
                    conns = side.node.host.get_network().connections.get(ID.from_base58(other.peer_id), [])
                    if len(conns) == 1:
                        mux = conns[0].muxed_conn
                        if mux.next_stream_id >= opened and len(mux.streams) == 2:
                            return
                    await trio.sleep(0.005)         # polled: nothing signals a closed stream
        side._call(wait)
    quiet(client, server, 7)                        # the dialler's streams are odd: 1, 3, 5 opened
    quiet(server, client, 8)                        # the listener's even: 2, 4, 6


def _record_frames(server, client) -> list:
    """Every yamux frame the server writes on its connection to `client`: (stream id, type, flags, payload)."""
    frames = []

    def install():
        [conn] = server.node.host.get_network().connections[ID.from_base58(client.peer_id)]
        muxed = conn.muxed_conn
        upstream = muxed._write_frame

        async def recording(data):
            _, typ, flags, sid, _ = struct.unpack(Y.YAMUX_HEADER_FORMAT, data[:Y.HEADER_SIZE])
            frames.append((sid, typ, flags, data[Y.HEADER_SIZE:]))
            await upstream(data)
        muxed._write_frame = recording
    server._sync(install)
    return frames


def _by_stream(frames) -> dict:
    out = {}
    for sid, typ, flags, payload in frames:
        out.setdefault(sid, []).append((typ, flags, payload))
    return out


def test_store_query_and_lightpush_are_answered_in_one_frame(make_node):
    server = make_node()
    client = make_node(store=False, shards=(1,))
    client.add_peer(server.listen_addrs[0])
    _settled(client, server)
    frames = _record_frames(server, client)
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"one", CT, timestamp=time.time_ns())).status_code == 200
    assert [r.message.payload for r in client.query_store(server.peer_id, [CT], pubsub_topic=PS)] == [b"one"]
    answered = [s for s in _by_stream(frames).values() if any(t == Y.TYPE_DATA for t, _, _ in s)]
    assert len(answered) == 2
    for (lp_or_store, proto) in zip(answered, (lightpush.LIGHTPUSH_V3_PROTOCOL, store_protocol.STORE_V3_PROTOCOL)):
        assert [(t, f) for t, f, _ in lp_or_store] == [(Y.TYPE_WINDOW_UPDATE, Y.FLAG_ACK), (Y.TYPE_DATA, Y.FLAG_FIN)]
        payload = lp_or_store[1][2]
        echo = bytes([len(MULTISTREAM)]) + MULTISTREAM + bytes([len(proto) + 1]) + proto.encode() + b"\n"
        assert payload.startswith(echo) and len(payload) > len(echo)       # the answer follows in the frame


def test_a_client_that_waits_for_the_echo_and_an_unanswered_request(make_node):
    """py-libp2p's own client (host.new_stream) waits for the echo: it is sent at once. A v2 store request that does
    not parse gets no answer: the echo (with the FIN) still tells the client the protocol was accepted."""
    server = make_node()
    client = make_node(store=False, shards=(1,))
    client.add_peer(server.listen_addrs[0])

    async def exchange(data: bytes):
        stream = await client.node.host.new_stream(ID.from_base58(server.peer_id), [store_protocol.STORE_V2_PROTOCOL])
        try:
            await write_length_prefixed(stream, data)
            with trio.fail_after(10):
                try:
                    return await read_length_prefixed(stream, 1 << 20)
                except Exception as e:     # noqa: BLE001 - the end of the stream is the answer here
                    return type(e).__name__
        finally:
            await stream.close()

    rpc = v2pb.HistoryRPC(request_id="r", query=v2pb.HistoryQuery(pubsub_topic=PS))
    answer = client._call(exchange, rpc.SerializeToString())
    assert v2pb.HistoryRPC.FromString(answer).request_id == "r"
    assert client._call(exchange, b"\xff\xff\xff") == "StreamEOF"     # negotiated, then EOF: no reset


def yamux_frames(data: bytes) -> list[tuple[int, int, int]]:
    """The yamux frames one write holds, as (stream id, type, flags)."""
    frames, at = [], 0
    while at + Y.HEADER_SIZE <= len(data):
        _, typ, flags, sid, length = struct.unpack(Y.YAMUX_HEADER_FORMAT, data[at:at + Y.HEADER_SIZE])
        frames.append((sid, typ, flags))
        at += Y.HEADER_SIZE + (length if typ == Y.TYPE_DATA else 0)
    return frames


def _record_writes(side, other) -> list:
    """Every write of `side`'s secured (Noise) connection to `other`, as the yamux frames it holds:
    one list of (stream id, type, flags) per write (each write is one Noise message and one socket send)."""
    writes = []

    def install():
        [conn] = side.node.host.get_network().connections[ID.from_base58(other.peer_id)]
        secured = conn.muxed_conn.secured_conn
        upstream = secured.write

        async def recording(data):
            writes.append(yamux_frames(data))
            await upstream(data)
        secured.write = recording
    side._sync(install)
    return writes


def test_fixes_33_34_a_lightpush_is_one_write_each_way(make_node, monkeypatch):
    """Fix 34: the client's SYN travels with its request, whose frame carries the client's FIN (one write, and no
    other: oneframe.write_and_close_write); fix 33: the server's ACK travels with the answer, which carries the echo
    and the FIN (one write). Each write is still a valid sequence of yamux frames.
    The ACK deadline is set beyond any answer here (a loaded machine must not send the ACK alone first): the
    deadline itself is tested in test_ack_deadline.py and tests/unit/waku/test_libp2p_fix33.py."""
    monkeypatch.setattr(yamux, "ACK_HOLD_S", 60.0)
    server = make_node()
    client = make_node(store=False, shards=(1,))
    client.add_peer(server.listen_addrs[0])
    _settled(client, server)
    sent, answered = _record_writes(client, server), _record_writes(server, client)
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"one", CT, timestamp=time.time_ns())).status_code == 200
    [sid] = {s for w in sent for s, t, f in w if f & Y.FLAG_SYN}
    mine = [w for w in sent if any(s == sid for s, _, _ in w)]
    assert mine == [[(sid, Y.TYPE_WINDOW_UPDATE, Y.FLAG_SYN), (sid, Y.TYPE_DATA, Y.FLAG_FIN)]]
    theirs = [w for w in answered if any(s == sid for s, _, _ in w)]
    assert theirs == [[(sid, Y.TYPE_WINDOW_UPDATE, Y.FLAG_ACK), (sid, Y.TYPE_DATA, Y.FLAG_FIN)]]


def test_a_lightpush_client_half_closes_with_its_request_and_keeps_no_stream(make_node):
    """Our lightpush client sends its FIN with the request (streams.open_stream(close_write=True)) and still reads
    the answer; its close after the answer writes nothing and the stream is gone from its yamux connection."""
    server = make_node()
    client = make_node(store=False, shards=(1,))
    client.add_peer(server.listen_addrs[0])
    _settled(client, server)
    sent = _record_writes(client, server)
    for i in range(3):
        r = client.lightpush(server.peer_id, PS, WakuMessage(b"m%d" % i, CT, timestamp=time.time_ns()))
        assert r.status_code == 200 and r.relay_peer_count == 0
    mine = [w for w in sent if any(f & (Y.FLAG_SYN | Y.FLAG_FIN) for _, _, f in w)]
    assert len(mine) == 3 and all(w[-1][1:] == (Y.TYPE_DATA, Y.FLAG_FIN) for w in mine)

    def open_streams():
        [conn] = client.node.host.get_network().connections[ID.from_base58(server.peer_id)]
        return {sid for w in mine for sid, _, _ in w} & set(conn.muxed_conn.streams)
    assert client._sync(open_streams) == set()
    assert len(list(server.query_store(None, [CT], pubsub_topic=PS))) == 3
