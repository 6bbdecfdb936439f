"""Fix 33 between real nodes on 127.0.0.1 (core/waku/libp2p_patches/yamux.py): a new stream's ACK rides with the
stream's first frame when the answer comes within ACK_DEADLINE_S, and goes alone once the deadline has passed for a
stream we accept and never write on (go-yamux closes the whole session when a stream it opened waits 75 s for its
ACK). Every write of the server's Noise connection is recorded with the yamux frames it holds and the socket
sends it took (its TCP stream's writes)."""
import threading
import time

from libp2p.peer.id import ID
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches import yamux
from core.waku.message import WakuMessage
from tests.integration.waku.test_one_frame import _settled, yamux_frames

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


class _Writes:
    """The server's writes to one peer: (frames, socket sends) per Noise message; `wait_for(sid)` returns the
    first write that carries a frame of stream `sid`, once there is one."""

    def __init__(self, side, other):
        self.writes: list = []
        self._cond = threading.Condition()
        side._sync(self._install, side, other)

    def _install(self, side, other) -> None:
        [conn] = side.node.host.get_network().connections[ID.from_base58(other.peer_id)]
        secured = conn.muxed_conn.secured_conn
        tcp = secured.conn.read_writer.read_write_closer.stream       # the socket (libp2p.io.trio.TrioTCPStream)
        upstream_write, upstream_send = secured.write, tcp.write
        current: list = []

        async def sending(data):
            if current:
                current[-1][1] += 1
            await upstream_send(data)

        async def recording(data):
            entry = [yamux_frames(data), 0]
            current.append(entry)
            try:
                await upstream_write(data)
            finally:
                current.remove(entry)
            with self._cond:
                self.writes.append(entry)
                self._cond.notify_all()
        tcp.write, secured.write = sending, recording

    def wait_for(self, sid: int, timeout: float = 15) -> list:
        def first():
            return next((w for w in self.writes if any(s == sid for s, _, _ in w[0])), None)
        with self._cond:
            assert self._cond.wait_for(first, timeout), f"nothing written on stream {sid}"
            return first()

    def new_ack(self, before: set) -> int:
        """The one stream, not in `before`, whose ACK has been written (waits: the write is recorded when it
        returns, which may be after the client already has the answer)."""
        def acked():
            return {s for w in self.writes for s, _, f in w[0] if f & Y.FLAG_ACK} - before
        with self._cond:
            assert self._cond.wait_for(acked, 15), "no new stream's ACK was written"
            [sid] = acked()
            return sid

    def on(self, sid: int) -> list:
        with self._cond:
            return [w for w in self.writes if any(s == sid for s, _, _ in w[0])]


def _pair(make_node):
    server = make_node()
    client = make_node(store=False, shards=(1,))
    client.add_peer(server.listen_addrs[0])
    _settled(client, server)        # the server has the connection and its set-up streams are over
    return server, client


def test_fix33_a_quick_answer_carries_the_ack_in_one_socket_send(make_node, monkeypatch):
    monkeypatch.setattr(yamux, "ACK_HOLD_S", 60.0)     # beyond any answer, whatever the machine's load
    server, client = _pair(make_node)
    writes = _Writes(server, client)
    sids_before = set(client._sync(lambda: set(_muxed(client, server).streams)))
    assert client.lightpush(server.peer_id, PS, WakuMessage(b"one", CT, timestamp=time.time_ns())).status_code == 200
    sid = writes.new_ack(sids_before)
    assert writes.on(sid) == [[[(sid, Y.TYPE_WINDOW_UPDATE, Y.FLAG_ACK), (sid, Y.TYPE_DATA, Y.FLAG_FIN)], 1]]


def _muxed(side, other):
    [conn] = side.node.host.get_network().connections[ID.from_base58(other.peer_id)]
    return conn.muxed_conn


def test_fix33_a_stream_never_written_on_is_acked_alone_by_its_deadline(make_node):
    """The client opens a bare yamux stream and sends nothing: the server's multistream-select waits for the
    client's header, so it writes nothing on the stream until its negotiation timeout (10 s) resets it. The ACK
    must go alone before that, in a write of its own (without the deadline it would ride with that RST)."""
    server, client = _pair(make_node)
    writes = _Writes(server, client)

    async def open_bare():
        return (await _muxed(client, server).open_stream()).stream_id
    sid = client._call(open_bare)
    assert writes.wait_for(sid) == [[(sid, Y.TYPE_WINDOW_UPDATE, Y.FLAG_ACK)], 1]
    assert server._sync(lambda: sid in _muxed(server, client).streams)     # still open: acked, not reset
