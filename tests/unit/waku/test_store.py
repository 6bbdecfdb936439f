"""Store v3 and v2-beta4 paging as pure functions over a real SQLite store; retention with a fake clock."""
import sqlite3

import pytest
from hypothesis import given, settings, strategies as st

from core.pb import waku_store_v2beta4_pb2 as v2pb
from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.message import WakuMessage, decode_message
from core.waku.store_db import DAY_NS, MessageStore
from core.waku.store_query import handle_store_v2, handle_store_v3

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"
N = 53


class Clock:
    def __init__(self, t=1_700_000_000 * 10**9):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def store(tmp_path):
    s = MessageStore(tmp_path / "store.db", clock=Clock())
    msgs = [WakuMessage(f"m{i}".encode(), CT, timestamp=1000 + i) for i in range(N)]
    msgs += [WakuMessage(b"other", "/app/1/other/proto", timestamp=1000 + i) for i in range(5)]
    msgs.append(WakuMessage(b"eph", CT, timestamp=2000, ephemeral=True))
    assert s.add_many((PS, m) for m in msgs) == N + 5  # ephemeral never stored
    yield s
    s.close()


def v3_all(store, forward, limit, **kw):
    pages, cursor = [], None
    while True:
        req = v3pb.StoreQueryRequest(request_id="r", include_data=True, pubsub_topic=PS, content_topics=[CT],
                                     pagination_forward=forward, pagination_limit=limit, **kw)
        if cursor:
            req.pagination_cursor = cursor
        resp = handle_store_v3(store, req)
        assert resp.status_code == 200 and resp.status_desc and resp.request_id == "r"
        pages.append([kv.message.payload for kv in resp.messages])
        if not resp.HasField("pagination_cursor"):
            return pages
        cursor = resp.pagination_cursor


@pytest.mark.parametrize("forward", [True, False])
def test_v3_paging_both_directions_pages_ascending(store, forward):
    pages = v3_all(store, forward, 10)
    assert [len(p) for p in pages] == [10] * 5 + [3]
    flat = [m for p in (pages if forward else reversed(pages)) for m in p]
    assert flat == [f"m{i}".encode() for i in range(N)]  # exclusive cursor: no duplicates, no gaps
    for p in pages:
        assert p == sorted(p, key=lambda b: int(b[1:]))  # each page oldest first


def test_v3_limits_default_and_cap(store):
    for lim, want in [(None, 20), (0, 20), (5, 5), (10**9, 53)]:
        req = v3pb.StoreQueryRequest(include_data=True, content_topics=[CT], pagination_forward=True)
        if lim is not None:
            req.pagination_limit = lim
        assert len(handle_store_v3(store, req).messages) == min(want, 100)
    big = MessageStore(clock=Clock())
    big.add_many((PS, WakuMessage(b"x%d" % i, CT, timestamp=i + 1)) for i in range(150))
    assert len(handle_store_v3(big, v3pb.StoreQueryRequest(pagination_limit=5000)).messages) == 100


def test_v3_time_window_inclusive_and_hash_only(store):
    resp = handle_store_v3(store, v3pb.StoreQueryRequest(content_topics=[CT], time_start=1010, time_end=1012,
                                                         pagination_forward=True))
    assert len(resp.messages) == 3 and not resp.messages[0].HasField("message")
    assert resp.messages[0].message_hash == WakuMessage(b"m10", CT, timestamp=1010).hash(PS)
    bad = handle_store_v3(store, v3pb.StoreQueryRequest(time_start=5, time_end=4))
    assert bad.status_code == 400 and bad.status_desc


def test_v3_invalid_cursor_and_empty_last_page(store):
    for cur in [b"\x00" * 32, b"short"]:
        r = handle_store_v3(store, v3pb.StoreQueryRequest(request_id="x", pagination_cursor=cur))
        assert (r.status_code, r.request_id, len(r.messages)) == (400, "x", 0) and "cursor" in r.status_desc
    last = WakuMessage(b"m52", CT, timestamp=1052).hash(PS)
    r = handle_store_v3(store, v3pb.StoreQueryRequest(content_topics=[CT], pagination_cursor=last,
                                                      pagination_forward=True))
    assert r.status_code == 200 and r.status_desc and len(r.messages) == 0 and not r.HasField("pagination_cursor")


def test_v3_hash_lookup(store):
    hs = [WakuMessage(b"m3", CT, timestamp=1003).hash(PS), b"\x01" * 32]
    r = handle_store_v3(store, v3pb.StoreQueryRequest(include_data=True, message_hashes=hs))
    assert [kv.message.payload for kv in r.messages] == [b"m3"]


def v2_all(store, direction, size, **kw):
    pages, cursor = [], None
    while True:
        rpc = v2pb.HistoryRPC(request_id="q")
        rpc.query.pubsub_topic = PS
        rpc.query.content_filters.add(content_topic=CT)
        rpc.query.paging_info.page_size = size
        rpc.query.paging_info.direction = direction
        for k, v in kw.items():
            setattr(rpc.query, k, v)
        if cursor is not None:
            rpc.query.paging_info.cursor.CopyFrom(cursor)
        out = handle_store_v2(store, rpc)
        assert out.request_id == "q" and out.response.error == v2pb.HistoryResponse.NONE
        pages.append([m.payload for m in out.response.messages])
        assert out.response.paging_info.page_size == len(pages[-1])
        if not out.response.paging_info.HasField("cursor"):
            return pages
        cursor = out.response.paging_info.cursor


@pytest.mark.parametrize("direction", [v2pb.PagingInfo.FORWARD, v2pb.PagingInfo.BACKWARD])
def test_v2_paging(store, direction):
    pages = v2_all(store, direction, 7)
    assert [len(p) for p in pages] == [7] * 7 + [4]
    ordered = pages if direction == v2pb.PagingInfo.FORWARD else list(reversed(pages))
    assert [m for p in ordered for m in p] == [f"m{i}".encode() for i in range(N)]


def test_v2_page_size_cap_time_window_and_backward_default(store):
    big = MessageStore(clock=Clock())
    big.add_many((PS, WakuMessage(b"x%d" % i, CT, timestamp=i + 1)) for i in range(150))
    rpc = v2pb.HistoryRPC()
    rpc.query.paging_info.page_size = 10**6
    r = handle_store_v2(big, rpc).response
    assert len(r.messages) == 100 and r.messages[-1].payload == b"x149"  # BACKWARD = newest page
    assert len(handle_store_v2(big, v2pb.HistoryRPC()).response.messages) == 100  # unspecified -> max
    pages = v2_all(store, v2pb.PagingInfo.FORWARD, 100, start_time=1050, end_time=1060)
    assert pages == [[b"m50", b"m51", b"m52"]]


def test_v2_invalid_cursor(store):
    rpc = v2pb.HistoryRPC(request_id="z")
    rpc.query.paging_info.cursor.digest = b"\x07" * 32
    rpc.query.paging_info.cursor.sender_time = 1001
    out = handle_store_v2(store, rpc)
    assert out.response.error == v2pb.HistoryResponse.INVALID_CURSOR and not out.response.messages


def test_retention_with_fake_clock(tmp_path):
    clock = Clock()
    s = MessageStore(tmp_path / "r.db", clock=clock)
    s.add(PS, WakuMessage(b"old", CT, timestamp=1))
    clock.t += 29 * DAY_NS
    s.add(PS, WakuMessage(b"new", CT, timestamp=2))
    assert s.prune() == 0
    clock.t += 2 * DAY_NS  # "old" is now 31 days old, "new" 2 days
    assert s.prune() == 1
    r = handle_store_v3(s, v3pb.StoreQueryRequest(include_data=True))
    assert [kv.message.payload for kv in r.messages] == [b"new"]
    s.close()
    s2 = MessageStore(tmp_path / "r.db", clock=clock, retention_ns=DAY_NS)  # persisted, configurable policy
    assert s2.count() == 1
    clock.t += DAY_NS + 1
    assert s2.prune() == 1 and s2.count() == 0
    s2.close()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_store_requests_from_network(data):
    """Arbitrary bytes as a v3 request or v2 RPC: either a protobuf error or a well-formed answer."""
    s = _FUZZ_STORE
    try:
        req = v3pb.StoreQueryRequest.FromString(data)
    except Exception:
        req = None
    if req is not None:
        resp = handle_store_v3(s, req)
        assert resp.status_code in (200, 400) and resp.status_desc and len(resp.messages) <= 100
    try:
        rpc = v2pb.HistoryRPC.FromString(data)
    except Exception:
        return
    assert len(handle_store_v2(s, rpc).response.messages) <= 100


_FUZZ_STORE = MessageStore(clock=Clock())
_FUZZ_STORE.add_many((PS, WakuMessage(b"f%d" % i, CT, timestamp=i + 1)) for i in range(30))


@pytest.mark.parametrize("n", [1, 128, 129, 300])
def test_insert_rows_in_multi_row_statements_counts_new_rows_only(tmp_path, n):
    from core.waku import store_db
    s = MessageStore(tmp_path / "m.db")
    msgs = [("/waku/2/rs/16/32", WakuMessage(b"m%d" % i, "/a/1/b/proto", timestamp=1_000 + i)) for i in range(n)]
    rows = s.rows(msgs)
    assert s.insert_rows(rows[: n // 2 + 1]) == n // 2 + 1
    assert s.insert_rows(rows) == n - (n // 2 + 1)          # INSERT OR IGNORE: the first half is not new
    assert s.count() == n and s.insert_rows([]) == 0
    assert [m.message.payload for m in s.page(store_db.Filter(), forward=True, limit=n)] == [m.payload for _, m in msgs]
    # a failing chunk rolls the whole batch back (more than one statement: one transaction)
    bad = s.rows([("/waku/2/rs/16/32", WakuMessage(b"x%d" % i, "/a/1/b/proto", timestamp=5_000 + i))
                  for i in range(store_db.INSERT_ROWS + 5)])
    bad[-1] = bad[-1][:6]                                   # a column short: the second statement fails
    with pytest.raises(sqlite3.ProgrammingError, match="Incorrect number of bindings"):
        s.insert_rows(bad)
    assert s.count() == n
    s.close()
