"""A member whose store peer is down when it starts (the owner's machine still booting, a network blip) gets the
archive link once that peer is back, without a restart: real py-libp2p Waku nodes on 127.0.0.1, a fake clock."""
from __future__ import annotations

import contextlib

from coincurve import PrivateKey

from core.node import events as E
from core.node.clock import FakeClock
from core.node.community import CommunityConfig
from core.node.engine import NO_LINK_QUERY_FAILED, Engine
from core.node.link_catchup import LINK_QUERY_EVERY_S, LINK_QUERY_RETRY_S
from core.node.transport import WakuTransport
from core.status.application_metadata import archive_link_envelopes
from core.status.topics import pubsub_topic
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore

T0 = 1_800_000_000
LINK = "magnet:?xt=urn:btih:" + "ab" * 20


def test_member_gets_the_link_when_its_store_peer_comes_back(tmp_path):
    clock = FakeClock(T0)
    ns = lambda: int(clock.now() * 10 ** 9)                           # noqa: E731
    key = PrivateKey()
    cid = "0x" + key.public_key.format(compressed=True).hex()
    events: list = []
    with contextlib.ExitStack() as stack:
        def fleet_node(port: int, store=None) -> EmbeddedWakuBackend:
            node = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=port, store=store, clock=ns,
                                                  key_path=tmp_path / "fleet.key"))
            node.start()
            stack.callback(node.stop)
            return node
        first = fleet_node(0)
        address = next(a for a in first.listen_addrs if "/ws" not in a)   # the configured peer (TCP)...
        first.stop()                                        # ...is down when the member starts
        member_waku = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=0, clock=ns))
        member_waku.start()
        stack.callback(member_waku.stop)
        engine = Engine(tmp_path / "member", clock=clock, offload=False, settle=0.0,
                        transport=WakuTransport(member_waku, store_peers=[address]))
        stack.callback(engine.stop)
        engine.bus.subscribe(events.append)
        engine.add_community(CommunityConfig(cid, "Back soon", "member")).result(60)
        state = engine.community_state(cid)
        assert state.waiting_reason.startswith(NO_LINK_QUERY_FAILED), state.waiting_reason
        assert f"asking again in {LINK_QUERY_RETRY_S[0]} s" in state.waiting_reason
        assert engine.links.failures(cid) == 1 and not engine.links.due(cid)

        store = MessageStore(tmp_path / "fleet-store.sqlite", clock=ns)
        stack.callback(store.close)
        for content_topic, envelope in archive_link_envelopes(key, int(clock.now() * 1000), LINK):
            store.add(pubsub_topic(), WakuMessage(payload=envelope, content_topic=content_topic, version=1,
                                                  timestamp=ns()))
        fleet_node(int(address.split("/tcp/")[1].split("/")[0]), store)   # back, same address and identity
        for f in engine.tick_all():                         # not due yet: only the member's own tick runs
            f.result(60)
        assert not [e for e in events if e.name == E.MAGNETLINK_RECEIVED]
        clock.advance(LINK_QUERY_RETRY_S[0])
        for f in engine.tick_all():
            f.result(60)
        received = [e for e in events if e.name == E.MAGNETLINK_RECEIVED]
        assert [e.data["link"] for e in received] == [LINK]    # both link chats carry it: one link, once
        assert engine.links.failures(cid) == 0
        assert not engine.community_state(cid).waiting_reason.startswith(NO_LINK_QUERY_FAILED)

        before = len(events)
        clock.advance(LINK_QUERY_EVERY_S)                   # the periodic query finds the same messages again:
        for f in engine.tick_all():                         # each was handed over once, so no new "replayed"
            f.result(60)
        assert engine.links.failures(cid) == 0 and not engine.links.due(cid)
        assert [e.name for e in events[before:] if e.name in (E.MAGNETLINK_RECEIVED, E.MAGNETLINK_REJECTED)] == []
