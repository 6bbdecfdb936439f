"""Offline catch-up over the real network (issue 18): the owner's computer was off for a whole 7-day window while
members chatted; a store node of the fleet (a real py-libp2p Waku node with its SQLite store, on 127.0.0.1) kept
the messages. When the owner's node starts, it asks that store node over the wire (store v3, paged) for the
missed range and builds the window from what it got: every message the store kept, nothing else."""
from __future__ import annotations

import contextlib

from core.archive.codec import decode_archive, decode_index
from core.node.clock import FakeClock
from core.node.community import CommunityConfig
from core.node.engine import Engine
from core.node.transport import WakuTransport
from core.status.traffic import TrafficGenerator
from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore

WEEK = 7 * 24 * 3600
START = 1_760_000_000


def test_owner_offline_for_a_window_builds_it_from_a_store_node_over_the_network(tmp_path):
    gen = TrafficGenerator(seed=11, channels=2, authors=5)
    key = tmp_path / "community.key"
    gen.community.save(key)
    sent = list(gen.messages(240, start=START, span=WEEK - 600))       # one window, while the owner was away
    clock = FakeClock(START + WEEK + 2 * 3600)                        # the window has closed, plus the grace
    ns = lambda: int(clock.now() * 10 ** 9)                           # noqa: E731
    nodes, stores = [], []
    with contextlib.ExitStack() as stack:
        fleet_store = MessageStore(tmp_path / "fleet-store.sqlite", clock=ns)
        stores.append(fleet_store)
        fleet_store.add_many((m.pubsub_topic, WakuMessage(payload=m.envelope, content_topic=m.content_topic,
                                                          version=1, timestamp=m.timestamp_ns)) for m in sent)
        # a chat on another community's topic, kept by the same store node: never archived by this owner
        other = next(TrafficGenerator(seed=12, channels=1, authors=1).messages(1, start=START + 60, span=60))
        fleet_store.add(other.pubsub_topic, WakuMessage(payload=other.envelope, content_topic=other.content_topic,
                                                        version=1, timestamp=other.timestamp_ns))
        fleet = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=0, store=fleet_store, clock=ns))
        fleet.start()
        nodes.append(fleet)
        owner_waku = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=0, clock=ns))
        owner_waku.start()
        nodes.append(owner_waku)
        stack.callback(lambda: [n.stop() for n in reversed(nodes)] and [s.close() for s in stores])
        torrents = TorrentService(TorrentSettings.loopback(), tmp_path / "torrent-state").start()
        stack.callback(torrents.close)
        engine = Engine(tmp_path / "owner", clock=clock, torrents=torrents, offload=False,
                        transport=WakuTransport(owner_waku, store_peers=[fleet.listen_addrs[0]]))
        stack.callback(engine.stop)
        chats = [c.chat_id for c in gen.channels]
        engine.add_community(CommunityConfig(gen.community_id, "", "control", chats, key_file=str(key))).result(120)
        folder = tmp_path / "owner" / "archivedata" / gen.community_id
        index = decode_index((folder / "index").read_bytes())
        data = (folder / "data").read_bytes()
        archived = [m for e in index.values()
                    for m in decode_archive(data[e.offset:e.offset + e.size - e.padding]).messages]
    first = min(m.timestamp_ns for m in sent) // 10 ** 9                       # a first build starts there
    assert {(e.start, e.end) for e in index.values()} == {(first, first + WEEK)}    # the missed window, whole
    assert sorted(m.hash for m in archived) == sorted(m.hash for m in sent)         # all it kept, nothing else
    assert len(archived) == len(sent) == 240
