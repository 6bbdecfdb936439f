"""Fix 19 (core/waku/libp2p_patches/streams.py): py-libp2p's multistream-select client waits for the server's header
before proposing a protocol; ours sends both in one write. Every store and lightpush client uses it, so the
integration tests (tests/integration/waku) run it end to end, "unsupported" included (test_faults.py)."""
import pytest
import trio
from libp2p.host.exceptions import StreamFailure
from libp2p.network.stream.net_stream import NetStream
from libp2p.peer.id import ID
from libp2p.protocol_muxer.exceptions import MultiselectClientError
from libp2p.protocol_muxer.multiselect_client import MultiselectClient

from core.waku.errors import UNSUPPORTED, peer_error
from core.waku.libp2p_patches.streams import MULTISTREAM, open_stream
from core.waku.lightpush import LIGHTPUSH_V3_PROTOCOL
from core.waku.node import NodeConfig, WakuNode

PROTO = "/vac/waku/lightpush/3.0.0"


class _Recorder:
    """A multistream communicator that answers like a server and records the order of writes and reads."""

    def __init__(self):
        self.log = []

    async def write(self, msg: str) -> None:
        self.log.append(("write", msg))

    async def read(self) -> str:
        self.log.append(("read",))
        return "/multistream/1.0.0" if len(self.log) <= 2 else PROTO


def test_fix19_upstream_client_waits_for_the_header_before_proposing():
    """Fails once py-libp2p pipelines header and proposal: then drop fix 19."""
    rec = _Recorder()
    assert trio.run(MultiselectClient().select_one_of, [PROTO], rec, 10) == PROTO
    assert rec.log == [("write", "/multistream/1.0.0"), ("read",), ("write", PROTO), ("read",)]


def test_fix19_one_write_then_the_answers(monkeypatch):
    writes = []
    upstream_write = NetStream.write

    async def recording_write(self, data):
        writes.append((self, bytes(data)))
        await upstream_write(self, data)

    async def main():
        server, client = WakuNode(NodeConfig(ws_port=None)), WakuNode(NodeConfig(ws_port=None, shards=(1,)))
        async with trio.open_nursery() as n:
            await n.start(server.run)
            await n.start(client.run)
            await client.connect(server.listen_addrs()[0])
            sid = ID.from_base58(server.peer_id)
            monkeypatch.setattr(NetStream, "write", recording_write)
            stream = await open_stream(client.host, sid, LIGHTPUSH_V3_PROTOCOL)
            assert stream.get_protocol() == LIGHTPUSH_V3_PROTOCOL
            await stream.close()
            ours = [data for s, data in writes if s is stream]   # the server's answers are written here too
            assert ours == [b"\x13" + MULTISTREAM + b"\x1a" + PROTO.encode() + b"\n"]
            # a protocol the server does not serve: "na", reported as upstream reports it
            with pytest.raises(StreamFailure) as err:
                await open_stream(client.host, sid, "/vac/waku/nothing/1.0.0")
            assert isinstance(err.value.__cause__, MultiselectClientError)
            assert peer_error(err.value, server.peer_id, "store query").kind == UNSUPPORTED
            n.cancel_scope.cancel()
    trio.run(main)
