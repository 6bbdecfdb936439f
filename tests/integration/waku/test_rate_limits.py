"""Rate limits per source address (issue 21): fresh peer ids are free to make, so one address gets one budget
of store and lightpush requests, whatever identities it uses; configured (protected) peers behind the same
address are still served. All clients connect from 127.0.0.1, which is not exempt by default."""
import time

import pytest

from core.waku.embedded import StoreQueryError
from core.waku.lightpush import TOO_MANY_REQUESTS
from core.waku.message import WakuMessage

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"
IP_BURST = 4


def test_fresh_peer_ids_from_one_address_get_429_after_its_budget(make_node):
    friend = make_node(store=False, ws_port=None)
    server = make_node(ws_port=None, requests_per_ip_s=0.001, request_burst_per_ip=IP_BURST,
                       protected_peers=(friend.peer_id,))
    server.config.store.add_many((PS, WakuMessage(b"m%d" % i, CT, timestamp=i + 1)) for i in range(3))
    addr = server.listen_addrs[0]
    served, refused = 0, 0
    for i in range(IP_BURST + 3):
        stranger = make_node(store=False, ws_port=None)   # a new peer id each time, same address
        try:
            assert len(list(stranger.query_store(addr, [CT]))) == 3
            served += 1
        except StoreQueryError as e:
            assert (e.code, e.desc, e.peer) == (429, "too many requests", server.peer_id)
            refused += 1
        if i == IP_BURST + 2:   # lightpush shares the address budget
            resp = stranger.lightpush(server.peer_id, PS, WakuMessage(b"x", CT, timestamp=time.time_ns()))
            assert (resp.status_code, resp.status_desc) == (TOO_MANY_REQUESTS, "too many requests")
        stranger.stop()
    assert (served, refused) == (IP_BURST, 3)
    assert server._sync(lambda: dict(server.node.limiter.refused)) == {"address": 4}
    # the configured peer, from the same exhausted address, is still served (store and lightpush)
    assert len(list(friend.query_store(addr, [CT]))) == 3
    resp = friend.lightpush(server.peer_id, PS, WakuMessage(b"y", CT, timestamp=time.time_ns()))
    assert resp.status_code == 200, resp.status_desc


def test_exempt_address_has_no_address_budget(make_node):
    server = make_node(ws_port=None, requests_per_ip_s=0.001, request_burst_per_ip=1,
                       rate_exempt_ips=("127.0.0.1",))
    for _ in range(3):
        stranger = make_node(store=False, ws_port=None)
        assert list(stranger.query_store(server.listen_addrs[0], [CT])) == []
        stranger.stop()
    assert server._sync(lambda: dict(server.node.limiter.refused)) == {}


def test_per_peer_limit_still_applies_to_one_peer(make_node):
    burst = 2
    server = make_node(ws_port=None, requests_per_s=0.001, request_burst=burst)
    client = make_node(store=False, ws_port=None)
    addr = server.listen_addrs[0]
    for _ in range(burst):
        assert list(client.query_store(addr, [CT])) == []
    with pytest.raises(StoreQueryError, match="429 too many requests"):
        list(client.query_store(addr, [CT]))
    assert server._sync(lambda: dict(server.node.limiter.refused)) == {"peer": 1}
