"""Store query logic for 13/WAKU2-STORE, as pure functions of (MessageStore, request) -> response.

v3 (/vac/waku/store-query/3.0.0): hash cursor (exclusive), sort by (timestamp, hash), pages always returned
oldest first, default page 20 and max 100, every response carries status_code and a non-empty status_desc,
a cursor is returned only while more messages remain (so a cursor pointing at the last message yields an empty
page with 200). A page with data also stops before MAX_RESPONSE_BYTES (at least one message, cursor set): js-waku
reads an answer of at most 4 MiB (it-length-prefixed's default): 4 messages of 900 KiB.
v2.0.0-beta4 (seed 004): Index cursor matched on (sender_time, digest[, pubsub_topic]), sort by
(sender_time, digest), page_size 0 or above the maximum auto-paginates to the maximum, unknown cursor ->
INVALID_CURSOR, default direction BACKWARD (enum value 0).
"""
from __future__ import annotations

from core.pb import waku_store_v2beta4_pb2 as v2pb
from core.pb import waku_store_v3_pb2 as v3pb
from core.pb.waku_message_pb2 import WakuMessage as PbWakuMessage
from core.waku.message import WakuMessage, encode_message
from core.waku.store_db import Filter, MessageStore

V3_DEFAULT_PAGE = 20
V3_MAX_PAGE = 100
V2_MAX_PAGE = 100
MAX_CONTENT_TOPICS = 100
MAX_HASHES = 100
MAX_RESPONSE_BYTES = 4 * 1024 * 1024 - 64 * 1024   # js-waku's read limit, less room for the envelope

OK, BAD_REQUEST, TOO_MANY_REQUESTS, INTERNAL, SERVICE_UNAVAILABLE = 200, 400, 429, 500, 503


def to_pb(m: WakuMessage) -> PbWakuMessage:
    return PbWakuMessage.FromString(encode_message(m))


def _fit(sizes, max_bytes: int = MAX_RESPONSE_BYTES) -> int:
    """How many leading entries of these encoded sizes fit in max_bytes (always at least one)."""
    total = count = 0
    for size in sizes:
        total += size + 8   # field tag and length prefixes
        if total > max_bytes and count:
            break
        count += 1
    return count


def _v3_error(req: v3pb.StoreQueryRequest, code: int, desc: str) -> v3pb.StoreQueryResponse:
    return v3pb.StoreQueryResponse(request_id=req.request_id, status_code=code, status_desc=desc)


def handle_store_v3(store: MessageStore, req: v3pb.StoreQueryRequest, *, default_limit: int = V3_DEFAULT_PAGE,
                    max_limit: int = V3_MAX_PAGE) -> v3pb.StoreQueryResponse:
    if len(req.content_topics) > MAX_CONTENT_TOPICS:
        return _v3_error(req, BAD_REQUEST, f"too many content topics (max {MAX_CONTENT_TOPICS})")
    if len(req.message_hashes) > MAX_HASHES:
        return _v3_error(req, BAD_REQUEST, f"too many message hashes (max {MAX_HASHES})")
    if any(len(h) != 32 for h in req.message_hashes):
        return _v3_error(req, BAD_REQUEST, "message hashes must be 32 bytes")
    start = req.time_start if req.HasField("time_start") else None
    end = req.time_end if req.HasField("time_end") else None
    if start is not None and end is not None and start > end:
        return _v3_error(req, BAD_REQUEST, "time_start is after time_end")
    limit = req.pagination_limit if req.HasField("pagination_limit") and req.pagination_limit > 0 \
        else default_limit
    limit = min(limit, max_limit)
    after = None
    if req.HasField("pagination_cursor"):
        cur = store.get(req.pagination_cursor) if len(req.pagination_cursor) == 32 else None
        if cur is None:
            return _v3_error(req, BAD_REQUEST, "invalid cursor")
        after = (cur.timestamp, cur.hash)
    flt = Filter(pubsub_topic=req.pubsub_topic if req.HasField("pubsub_topic") else None,
                 content_topics=tuple(req.content_topics), start=start, end=end,
                 hashes=tuple(req.message_hashes))
    rows = store.page(flt, forward=req.pagination_forward, limit=limit + 1, after=after)
    more = len(rows) > limit
    rows = rows[:limit]
    pbs = []
    if req.include_data:
        pbs = [to_pb(r.message) for r in rows]
        fit = _fit(pb.ByteSize() + len(r.pubsub_topic) + 40 for pb, r in zip(pbs, rows))
        more, rows, pbs = more or fit < len(rows), rows[:fit], pbs[:fit]
    resp = v3pb.StoreQueryResponse(request_id=req.request_id, status_code=OK, status_desc="OK")
    if more:
        resp.pagination_cursor = rows[-1].hash
    if not req.pagination_forward:
        rows.reverse()
        pbs.reverse()
    for i, r in enumerate(rows):
        kv = resp.messages.add(message_hash=r.hash)
        if req.include_data:
            kv.message.CopyFrom(pbs[i])
            kv.pubsub_topic = r.pubsub_topic
    return resp


def _index(r) -> v2pb.Index:
    return v2pb.Index(digest=r.digest, receiver_time=r.stored_at, sender_time=r.timestamp,
                      pubsub_topic=r.pubsub_topic)


def handle_store_v2(store: MessageStore, rpc: v2pb.HistoryRPC, *, max_page: int = V2_MAX_PAGE) -> v2pb.HistoryRPC:
    q = rpc.query
    out = v2pb.HistoryRPC(request_id=rpc.request_id)
    resp = out.response
    pi = q.paging_info
    forward = pi.direction == v2pb.PagingInfo.FORWARD
    page_size = pi.page_size if 0 < pi.page_size <= max_page else max_page
    resp.paging_info.direction = pi.direction
    if len(q.content_filters) > MAX_CONTENT_TOPICS:
        resp.error = v2pb.HistoryResponse.SERVICE_UNAVAILABLE  # the enum has no BAD_REQUEST
        return out
    after = None
    if pi.HasField("cursor") and pi.cursor.digest:
        c = pi.cursor
        if not store.find_v2_cursor(c.digest, c.sender_time, c.pubsub_topic or None):
            resp.error = v2pb.HistoryResponse.INVALID_CURSOR
            return out
        after = (c.sender_time, c.digest)
    flt = Filter(pubsub_topic=q.pubsub_topic or None,
                 content_topics=tuple(cf.content_topic for cf in q.content_filters),
                 start=q.start_time if q.HasField("start_time") else None,
                 end=q.end_time if q.HasField("end_time") else None)
    rows = store.page(flt, forward=forward, limit=page_size + 1, after=after, key="digest")
    more = len(rows) > page_size
    rows = rows[:page_size]
    pbs = [to_pb(r.message) for r in rows]
    fit = _fit(pb.ByteSize() for pb in pbs)
    more, rows, pbs = more or fit < len(rows), rows[:fit], pbs[:fit]
    if more:
        resp.paging_info.cursor.CopyFrom(_index(rows[-1]))
    if not forward:
        pbs.reverse()
    resp.paging_info.page_size = len(pbs)
    resp.messages.extend(pbs)
    return out
