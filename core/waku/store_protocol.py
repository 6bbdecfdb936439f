"""13/WAKU2-STORE on the wire: v3 (/vac/waku/store-query/3.0.0) and v2.0.0-beta4 servers and clients.

One length-prefixed protobuf per direction per stream. The query logic lives in store_query.py.
"""
from __future__ import annotations

import contextlib

from google.protobuf.message import DecodeError as PbDecodeError

from core.pb import waku_store_v2beta4_pb2 as v2pb
from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.edge_streams import DEFAULT_READ_TIMEOUT_S, Exchange, serve_exchange
from core.waku.libp2p_patches.framing import read_length_prefixed
from core.waku.libp2p_patches.streams import open_stream
from core.waku.store_db import MessageStore
from core.waku.store_query import BAD_REQUEST, TOO_MANY_REQUESTS, handle_store_v2, handle_store_v3
from core.varint import DecodeError, write_varint

STORE_V3_PROTOCOL = "/vac/waku/store-query/3.0.0"
STORE_V2_PROTOCOL = "/vac/waku/store/2.0.0-beta4"
MAX_REQUEST = 256 * 1024
MAX_RESPONSE = 64 * 1024 * 1024


def answer_v3(store: MessageStore, data: bytes) -> bytes:
    """Bytes in, bytes out: a malformed request gets a 400 response, never an exception."""
    try:
        req = v3pb.StoreQueryRequest.FromString(data)
    except PbDecodeError:
        return v3pb.StoreQueryResponse(status_code=BAD_REQUEST, status_desc="malformed request").SerializeToString()
    return handle_store_v3(store, req).SerializeToString()


def answer_v2(store: MessageStore, data: bytes) -> bytes | None:
    try:
        rpc = v2pb.HistoryRPC.FromString(data)
    except PbDecodeError:
        return None
    return handle_store_v2(store, rpc).SerializeToString()


def too_many_v3(data: bytes) -> bytes:
    try:
        rid = v3pb.StoreQueryRequest.FromString(data).request_id
    except PbDecodeError:
        rid = ""
    return v3pb.StoreQueryResponse(request_id=rid, status_code=TOO_MANY_REQUESTS,
                                   status_desc="too many requests").SerializeToString()


def too_many_v2(data: bytes) -> bytes | None:
    try:
        out = v2pb.HistoryRPC(request_id=v2pb.HistoryRPC.FromString(data).request_id)
    except PbDecodeError:
        return None
    out.response.error = v2pb.HistoryResponse.TOO_MANY_RESULTS  # the v2 enum's 429
    return out.SerializeToString()


def refuse_v3(text: str) -> bytes:
    """Store v3 has no 413: an oversize request is a 400 (the request id is in the unread body)."""
    return v3pb.StoreQueryResponse(status_code=BAD_REQUEST, status_desc=text).SerializeToString()


# Queries are answered on the event loop, inside `writes()` (the node's: the messages buffered before the query
# are written first, on the loop, and no write is under way meanwhile), so the loop never blocks on the store's
# lock. Not in a worker thread (issue 21): the answer is mostly Python work that holds the GIL anyway, and every
# SQLite step releases it, so with a busy loop each re-acquisition could wait up to the 5 ms switch interval.
async def serve_v3(stream, store: MessageStore, allowed: bool = True, *, timeout_s: float = DEFAULT_READ_TIMEOUT_S,
                   writes=None) -> None:
    async def answer(data: bytes) -> bytes:
        if not allowed:
            return too_many_v3(data)
        async with writes() if writes else contextlib.nullcontext():
            return answer_v3(store, data)
    await serve_exchange(stream, Exchange("store v3", MAX_REQUEST, timeout_s, refuse_v3), answer)


async def serve_v2(stream, store: MessageStore, allowed: bool = True, *, timeout_s: float = DEFAULT_READ_TIMEOUT_S,
                   writes=None) -> None:
    """v2-beta4 has no error code for a bad request: an oversize one is logged and its stream closed."""
    async def answer(data: bytes) -> bytes | None:
        if not allowed:
            return too_many_v2(data)
        async with writes() if writes else contextlib.nullcontext():
            return answer_v2(store, data)
    await serve_exchange(stream, Exchange("store v2", MAX_REQUEST, timeout_s), answer)


async def _roundtrip(host, peer_id, protocol: str, data: bytes) -> bytes:
    stream = await open_stream(host, peer_id, protocol, first=write_varint(len(data)) + data)   # fix 19
    try:
        return await read_length_prefixed(stream, MAX_RESPONSE)
    finally:
        await stream.close()


async def query_v3(host, peer_id, req: v3pb.StoreQueryRequest) -> v3pb.StoreQueryResponse:
    raw = await _roundtrip(host, peer_id, STORE_V3_PROTOCOL, req.SerializeToString())
    try:
        return v3pb.StoreQueryResponse.FromString(raw)
    except PbDecodeError as e:
        raise DecodeError(f"malformed store v3 response: {e}") from e


async def query_v2(host, peer_id, rpc: v2pb.HistoryRPC) -> v2pb.HistoryRPC:
    raw = await _roundtrip(host, peer_id, STORE_V2_PROTOCOL, rpc.SerializeToString())
    try:
        return v2pb.HistoryRPC.FromString(raw)
    except PbDecodeError as e:
        raise DecodeError(f"malformed store v2 response: {e}") from e
