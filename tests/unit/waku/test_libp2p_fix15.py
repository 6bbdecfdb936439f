"""Fix 15 (core/waku/libp2p_patches/yamux.py): yamux window updates only once half of the
receive window is consumed. Two real nodes on 127.0.0.1; `b` opens a stream to a test protocol on `a`, and every
yamux frame `a` writes is recorded."""
import struct

import trio
from libp2p.custom_types import TProtocol
from libp2p.peer.id import ID
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches.yamux import UPSTREAM_AUTO_TUNE, half_window_update
from core.waku.node import NodeConfig, WakuNode

PROTO = TProtocol("/archivist/test/fix15/1.0.0")
SMALL = 1000            # bytes, read one at a time (like a uvarint length prefix)
BULK = 1 << 20          # 4 x the default 256 KiB window


def _run(reader, monkeypatch) -> tuple[list[int], bytes]:
    """b sends SMALL bytes then BULK bytes on one stream; a reads them with `reader(stream, n)` and answers b"ok".
    Returns the credit increments a sent on that stream (WINDOW_UPDATE frames without flags) and the answer."""
    credits: list[int] = []
    upstream_write = Y.Yamux._write_frame

    async def recording_write(self, data: bytes) -> None:
        _, typ, flags, sid, length = struct.unpack(Y.YAMUX_HEADER_FORMAT, data[:Y.HEADER_SIZE])
        if not self.is_initiator and typ == Y.TYPE_WINDOW_UPDATE and flags == 0 and sid % 2 == 1:
            credits.append(length)
        await upstream_write(self, data)
    monkeypatch.setattr(Y.Yamux, "_write_frame", recording_write)
    got = {}

    async def handler(stream):
        await reader(stream, SMALL)
        got["small"] = len(credits)
        await reader(stream, BULK)
        await stream.write(b"ok")
        await stream.close()

    async def main():
        a, b = WakuNode(NodeConfig(ws_port=None)), WakuNode(NodeConfig(ws_port=None))
        async with trio.open_nursery() as n:
            await n.start(a.run)
            await n.start(b.run)
            a.host.set_stream_handler(PROTO, handler)
            await b.connect(f"{a.listen_addrs()[0]}")
            with trio.fail_after(30):
                s = await b.host.new_stream(ID.from_base58(a.peer_id), [PROTO])
                await s.write(b"x" * SMALL)
                await s.write(b"y" * BULK)
                got["answer"] = await s.read(2)
                await s.close()
            n.cancel_scope.cancel()
    trio.run(main)
    return credits, got


async def _read_bytewise_then_chunks(stream, n: int) -> None:
    if n == SMALL:
        for _ in range(n):
            assert await stream.read(1)
        return
    left = n
    while left:
        left -= len(await stream.read(min(left, 8192)))


def test_fix15_credits_once_half_the_window_is_consumed(monkeypatch):
    assert Y.YamuxStream._auto_tune_and_send_window_update is half_window_update  # installed on import
    credits, got = _run(_read_bytewise_then_chunks, monkeypatch)
    assert got["answer"] == b"ok"
    assert got["small"] == 0                       # 1,000 one-byte reads: no update (upstream: one per read)
    # the 1 MiB needed credit beyond the initial window, each grant at least half a window
    assert all(c >= Y.DEFAULT_WINDOW_SIZE // 2 for c in credits), credits
    assert sum(credits) >= SMALL + BULK - Y.DEFAULT_WINDOW_SIZE
    assert 1 <= len(credits) <= (SMALL + BULK) // (Y.DEFAULT_WINDOW_SIZE // 2)


def test_fix15_upstream_still_sends_an_update_per_read(monkeypatch):
    """Fails once py-libp2p stops sending a WINDOW_UPDATE for (nearly) every read: then drop fix 15."""
    monkeypatch.setattr(Y.YamuxStream, "_auto_tune_and_send_window_update", UPSTREAM_AUTO_TUNE)
    credits, got = _run(_read_bytewise_then_chunks, monkeypatch)
    assert got["answer"] == b"ok"
    assert got["small"] >= SMALL - 10              # one frame per byte read
