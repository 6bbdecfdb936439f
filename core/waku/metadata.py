"""66/WAKU2-METADATA (/vac/waku/metadata/1.0.0): exchange cluster id and shards; disconnect on a mismatch."""
from __future__ import annotations

from core.pb import waku_metadata_pb2 as mpb
from core.waku.edge_streams import DEFAULT_READ_TIMEOUT_S, Exchange, serve_exchange
from core.waku.libp2p_patches.framing import read_length_prefixed, write_length_prefixed

METADATA_PROTOCOL = "/vac/waku/metadata/1.0.0"
MAX_FRAME = 64 * 1024


def decode_metadata(data: bytes) -> tuple[int | None, list[int]]:
    """(cluster_id, shards) from a request or response (same layout); raises on malformed bytes. As nwaku: the
    packed field 3 when present, else field 2 (packed or not: protobuf reads both)."""
    m = mpb.WakuMetadataResponse.FromString(data)
    return (m.cluster_id if m.HasField("cluster_id") else None), list(m.shards_packed or m.shards)


def encode_metadata(cluster_id: int, shards) -> bytes:
    """As nwaku writes it: shards unpacked in field 2 (older readers) and packed in field 3."""
    shards = list(shards)
    return mpb.WakuMetadataResponse(cluster_id=cluster_id, shards=shards, shards_packed=shards).SerializeToString()


def cluster_matches(ours: int, theirs: int | None) -> bool:
    """nwaku: a peer that reports another cluster id is disconnected (an absent id is tolerated)."""
    return theirs is None or theirs == ours


async def serve(stream, cluster_id: int, shards, on_mismatch, *, timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> None:
    theirs = None

    async def answer(data: bytes) -> bytes:
        nonlocal theirs
        theirs, _ = decode_metadata(data)  # malformed: logged at debug, stream closed
        return encode_metadata(cluster_id, shards)
    await serve_exchange(stream, Exchange("metadata", MAX_FRAME, timeout_s), answer)
    # the response is flushed (stream closed) before any disconnect below
    if not cluster_matches(cluster_id, theirs):
        await on_mismatch(stream.muxed_conn.peer_id, theirs)


async def request(host, peer_id, cluster_id: int, shards) -> tuple[int | None, list[int]]:
    stream = await host.new_stream(peer_id, [METADATA_PROTOCOL])
    try:
        await write_length_prefixed(stream, encode_metadata(cluster_id, shards))
        return decode_metadata(await read_length_prefixed(stream, MAX_FRAME))
    finally:
        await stream.close()
