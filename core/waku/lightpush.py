"""Lightpush: v3 (/vac/waku/lightpush/3.0.0) server and client, and the legacy v2-beta1 server.

Status codes are nwaku's (waku_lightpush/common.nim). Departure: when no relay peer is connected we still
accept (200, relay_peer_count=0) because the message is stored and delivered locally; nwaku answers 505.
"""
from __future__ import annotations

import logging
import uuid
from typing import Awaitable, Callable

from google.protobuf.message import DecodeError as PbDecodeError

from core.pb import waku_lightpush_pb2 as lpb
from core.waku.edge_streams import DEFAULT_READ_TIMEOUT_S, Exchange, serve_exchange
from core.waku.libp2p_patches.framing import read_length_prefixed
from core.waku.libp2p_patches.streams import open_stream
from core.waku.message import InvalidMessage, WakuMessage, decode_message
from core.varint import DecodeError, write_varint

LIGHTPUSH_V3_PROTOCOL = "/vac/waku/lightpush/3.0.0"
LIGHTPUSH_V2_PROTOCOL = "/vac/waku/lightpush/2.0.0-beta1"
MAX_REQUEST = 2 * 1024 * 1024
REQUEST_OVERHEAD = 64 * 1024  # request id, pubsub topic, message fields: max_request = max message size + this
SUCCESS, BAD_REQUEST, PAYLOAD_TOO_LARGE, INVALID_MESSAGE = 200, 400, 413, 420
UNSUPPORTED_PUBSUB_TOPIC, TOO_MANY_REQUESTS, INTERNAL_SERVER_ERROR = 421, 429, 500
log = logging.getLogger(__name__)

# publish(pubsub_topic or None, message) -> number of relay peers; raises InvalidMessage / ValueError(topic)
PublishFn = Callable[[str | None, WakuMessage], Awaitable[int]]


class UnsupportedTopic(ValueError):
    pass


class PayloadTooLarge(InvalidMessage):
    pass


async def answer_v3(data: bytes, publish: PublishFn) -> lpb.LightpushResponse:
    try:
        req = lpb.LightpushRequest.FromString(data)
        if not req.HasField("message"):
            return lpb.LightpushResponse(request_id=req.request_id, status_code=BAD_REQUEST,
                                         status_desc="no message")
        req.message.DiscardUnknownFields()            # parsed already: what protobuf skipped is not walked again
        msg = decode_message(req.message.SerializeToString(), require_presence=False)
    except (PbDecodeError, DecodeError) as e:
        return lpb.LightpushResponse(status_code=BAD_REQUEST, status_desc=f"malformed request: {e}")
    resp = lpb.LightpushResponse(request_id=req.request_id)
    try:
        resp.relay_peer_count = await publish(req.pubsub_topic if req.HasField("pubsub_topic") else None, msg)
        resp.status_code, resp.status_desc = SUCCESS, "OK"
    except PayloadTooLarge as e:
        resp.status_code, resp.status_desc = PAYLOAD_TOO_LARGE, str(e)
    except InvalidMessage as e:
        resp.status_code, resp.status_desc = INVALID_MESSAGE, str(e)
    except UnsupportedTopic as e:
        resp.status_code, resp.status_desc = UNSUPPORTED_PUBSUB_TOPIC, str(e)
    except Exception as e:  # noqa: BLE001 - report, never crash the handler
        log.warning("lightpush publish failed: %s", e)
        resp.status_code, resp.status_desc = INTERNAL_SERVER_ERROR, "internal error"
    return resp


def refuse_v3(text: str) -> bytes:
    """The answer to a request whose size alone refuses it: 413 (the request id is in the unread body)."""
    return lpb.LightpushResponse(status_code=PAYLOAD_TOO_LARGE, status_desc=text).SerializeToString()


def refuse_v2(text: str) -> bytes:
    out = lpb.PushRpc()
    out.response.is_success, out.response.info = False, text
    return out.SerializeToString()


async def serve_v3(stream, publish: PublishFn, allowed: bool = True, *, max_request: int = MAX_REQUEST,
                   timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> None:
    async def answer(data: bytes) -> bytes:
        if not allowed:
            return lpb.LightpushResponse(status_code=TOO_MANY_REQUESTS,
                                         status_desc="too many requests").SerializeToString()
        return (await answer_v3(data, publish)).SerializeToString()
    await serve_exchange(stream, Exchange("lightpush v3", max_request, timeout_s, refuse_v3), answer)


async def answer_v2(data: bytes, publish: PublishFn) -> lpb.PushRpc | None:
    try:
        rpc = lpb.PushRpc.FromString(data)
    except PbDecodeError:
        return None
    out = lpb.PushRpc(request_id=rpc.request_id)
    if not rpc.HasField("request") or not rpc.request.HasField("message"):
        out.response.is_success, out.response.info = False, "no request"
        return out
    try:
        rpc.request.message.DiscardUnknownFields()
        msg = decode_message(rpc.request.message.SerializeToString(), require_presence=False)
        await publish(rpc.request.pubsub_topic or None, msg)
        out.response.is_success, out.response.info = True, "OK"
    except (InvalidMessage, UnsupportedTopic, DecodeError) as e:
        out.response.is_success, out.response.info = False, str(e)
    return out


def too_many_v2(data: bytes) -> bytes | None:
    try:
        out = lpb.PushRpc(request_id=lpb.PushRpc.FromString(data).request_id)
    except PbDecodeError:
        return None
    out.response.is_success, out.response.info = False, "too many requests"
    return out.SerializeToString()


async def serve_v2(stream, publish: PublishFn, allowed: bool = True, *, max_request: int = MAX_REQUEST,
                   timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> None:
    async def answer(data: bytes) -> bytes | None:
        if not allowed:
            return too_many_v2(data)
        out = await answer_v2(data, publish)
        return out.SerializeToString() if out is not None else None
    await serve_exchange(stream, Exchange("lightpush v2", max_request, timeout_s, refuse_v2), answer)


async def push_v3(host, peer_id, pubsub_topic: str | None, msg: WakuMessage) -> lpb.LightpushResponse:
    from core.waku.store_query import to_pb
    req = lpb.LightpushRequest(request_id=uuid.uuid4().hex, message=to_pb(msg))
    if pubsub_topic:
        req.pubsub_topic = pubsub_topic
    data = req.SerializeToString()
    stream = await open_stream(host, peer_id, LIGHTPUSH_V3_PROTOCOL,   # fix 19: one round trip, one write,
                               first=write_varint(len(data)) + data, close_write=True)   # with our FIN
    try:
        raw = await read_length_prefixed(stream, 64 * 1024)
    finally:
        await stream.close()
    try:
        return lpb.LightpushResponse.FromString(raw)
    except PbDecodeError as e:
        raise DecodeError(f"malformed lightpush response: {e}") from e
