"""Stopping the engine ends a store query whose peer never answers (real py-libp2p nodes on 127.0.0.1): before,
the query held its community's queue, and so the stop of a headless node, for the backend's call timeout per
page. The backend's cancel_queries ends it with a WakuPeerError of kind "cancelled" and refuses new queries."""
from __future__ import annotations

import contextlib
import threading

import pytest
import trio
from coincurve import PrivateKey

from core.node.clock import FakeClock
from core.node.community import CommunityConfig
from core.node.engine import NO_LINK_QUERY_FAILED, Engine
from core.node.transport import WakuTransport
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.errors import CANCELLED, WakuPeerError
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore
from core.waku.store_protocol import STORE_V3_PROTOCOL

T0 = 1_800_000_000
HOUR = 3600.0          # the member's call timeout: a query that is not cancelled outlives the test's guard


def test_engine_stop_ends_a_store_query_that_never_answers(tmp_path):
    clock = FakeClock(T0)
    ns = lambda: int(clock.now() * 10 ** 9)                           # noqa: E731
    cid = "0x" + PrivateKey().public_key.format(compressed=True).hex()
    asked = threading.Event()

    async def never_answers(stream):
        asked.set()
        await trio.sleep_forever()

    with contextlib.ExitStack() as stack:
        store = MessageStore(tmp_path / "fleet-store.sqlite", clock=ns)
        stack.callback(store.close)
        fleet = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=0, store=store, clock=ns))
        fleet.start()
        stack.callback(fleet.stop)
        fleet._sync(fleet.node.host.set_stream_handler, STORE_V3_PROTOCOL, never_answers)
        address = next(a for a in fleet.listen_addrs if "/ws" not in a)
        member_waku = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=0, clock=ns), call_timeout=HOUR)
        member_waku.start()
        stack.callback(member_waku.stop)
        engine = Engine(tmp_path / "member", clock=clock, offload=False, settle=0.0,
                        transport=WakuTransport(member_waku, store_peers=[address]))
        started = engine.add_community(CommunityConfig(cid, "Slow peer", "member"))
        assert asked.wait(60), "the member never asked the store"
        assert not started.done()                          # the start's store query is waiting for the answer

        stopper = threading.Thread(target=engine.stop)
        stopper.start()
        stopper.join(60)                                   # without the cancel: an hour (call_timeout)
        assert not stopper.is_alive(), "Engine.stop waited for the store query"
        assert started.result(0) is None                   # the start ended (its query was cancelled, not failed)
        assert not (engine.nodes[cid].waiting_reason or "").startswith(NO_LINK_QUERY_FAILED)

        with pytest.raises(WakuPeerError) as e:             # and new queries are refused at once
            list(member_waku.query_store(address, ["/waku/2/x/proto"], 0, ns()))
        assert e.value.kind == CANCELLED and e.value.reason == "the node is stopping"
        assert list(fleet.query_store(None, ["/waku/2/x/proto"], 0, ns())) == []   # another node is not affected
