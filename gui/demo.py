"""`archivist demo`: a control node, a member node and a traffic generator on 127.0.0.1 with a sample community
that has months of history. No Qt here: the window attaches to `DemoNodes.control` and `.member`, and the
headless demo prints the same flow. Everything is real: two libtorrent sessions, two Waku nodes (core/waku, one
libp2p host each, on 127.0.0.1 TCP: the owner's signed archive links reach the member over relay, and the member
asks the owner's store for links it missed), SQLite. Only the months of past chat are put straight into the
owner's message store (as if it had been online all along) instead of being relayed one by one."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

WEEK = 7 * 24 * 3600


@dataclass
class DemoNodes:
    root: Path
    weeks: int = 12
    messages: int = 3000
    settle: float = 3.0
    tick_seconds: float = 0.5
    clock: object | None = None               # core.node.clock.FakeClock in tests; the system clock otherwise
    offload: bool = True                      # build and import in worker processes (core/node/offload.py)
    log: Callable[[str], None] = lambda s: None
    history_start: int | None = None
    parts: dict = field(default_factory=dict)

    def start(self) -> "DemoNodes":
        """Create both engines (slow: libtorrent sessions, key generation); call off the GUI thread."""
        from core.node.clock import SystemClock
        from core.node.community import CommunityConfig
        from core.node.engine import Engine
        from core.node.hydrate import reference_hydrator
        from core.node.transport import WakuTransport
        from core.status.traffic import TrafficGenerator
        from core.storage.member_history import MemberHistory
        from core.torrent.service import TorrentService
        from core.torrent.settings import TorrentSettings
        self.clock = self.clock or SystemClock()
        now = int(self.clock.now())
        self.history_start = self.history_start or (now - self.weeks * WEEK - 3600)
        self.waku_owner, self.waku_member = self._waku("owner"), self._waku("member")
        owner_addr = self.waku_owner.listen_addrs[0]
        self.waku_member.add_peer(owner_addr)
        self.owner_transport = WakuTransport(self.waku_owner)
        self.member_transport = WakuTransport(self.waku_member, store_peers=[owner_addr])
        self.gen = TrafficGenerator(seed=7, channels=3, authors=12)
        keyfile = self.root / "community.key"
        self.root.mkdir(parents=True, exist_ok=True)
        self.gen.community.save(keyfile)
        chats = [c.chat_id for c in self.gen.channels]
        self.control_cfg = CommunityConfig(self.gen.community_id, "Sample community", "control", chats,
                                           key_file=str(keyfile))
        self.member_cfg = CommunityConfig(self.gen.community_id, "Sample community", "member", chats,
                                          policy="latest")
        self.t_control = TorrentService(TorrentSettings.loopback(), self.root / "owner" / "torrent-state").start()
        self.t_member = TorrentService(TorrentSettings.loopback(metadata_timeout=10.0),
                                       self.root / "member" / "torrent-state").start()
        self.control = Engine(self.root / "owner", clock=self.clock, transport=self.owner_transport,
                              torrents=self.t_control, tick_seconds=self.tick_seconds, offload=self.offload)
        self.history = MemberHistory(self.root / "member" / "history.sqlite")
        self.member = Engine(self.root / "member", clock=self.clock, transport=self.member_transport,
                             torrents=self.t_member,
                             hydrator=reference_hydrator(self.history), settle=self.settle, history=self.history,
                             tick_seconds=self.tick_seconds, peers=(("127.0.0.1", self.t_control.listen_port),),
                             offload=self.offload)
        self.log(f"demo: community {self.gen.community_id[:18]}…, owner seeds on 127.0.0.1:"
                 f"{self.t_control.listen_port}")
        self.log(f"demo: Waku relay between two libp2p hosts: owner {self.waku_owner.peer_id} "
                 f"<-> member {self.waku_member.peer_id} ({owner_addr.split('/p2p/')[0]})")
        return self

    def _waku(self, name: str):
        """One embedded Waku node (relay + store) on 127.0.0.1, on the demo's clock (its timestamp checks too)."""
        from core.waku.embedded import EmbeddedWakuBackend
        from core.waku.node import NodeConfig
        from core.waku.store_db import MessageStore
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        clock_ns = lambda: int(self.clock.now() * 10 ** 9)  # noqa: E731
        store = MessageStore(folder / "waku-store.sqlite", clock=clock_ns)
        node = EmbeddedWakuBackend(NodeConfig(host="127.0.0.1", tcp_port=0, store=store,
                                              key_path=folder / "waku-node.key", clock=clock_ns))
        node.start()
        self.parts.setdefault("waku", []).append((node, store))
        return node

    def add_owner(self, with_history: bool = True) -> None:
        """The owner's node runs; the traffic generator replays `weeks` of chat over the local relay."""
        cid = self.control_cfg.community_id
        self.control.add_community(self.control_cfg).result(60)
        if with_history:
            self.publish_history()

    def publish_history(self) -> int:
        """Months of past chat reach the owner's store in one batch (as if it had been online all along: one
        SQLite transaction instead of one per relayed message); the same envelopes go to the hub's store."""
        from core.node.control import ReceivedWakuMessage
        cid = self.control_cfg.community_id
        args = (self.gen.seed, len(self.gen.channels), len(self.gen.authors), self.messages, self.history_start,
                self.weeks * WEEK)
        off = self.control.offloader     # the generator signs every message: in a worker process when offloading
        batch = [ReceivedWakuMessage(*m) for m in (off.run(traffic_batch, *args) if off else traffic_batch(*args))]
        stored = self.control.submit(cid, self.control.nodes[cid].store_messages, batch).result(120)
        self.log(f"demo: traffic generator sent {len(batch)} messages over {self.weeks} weeks ({stored} stored)")
        return stored

    def add_member(self) -> None:
        self.member.add_community(self.member_cfg).result(60)

    def run_engines(self) -> None:
        self.control.start()
        self.member.start()

    def history_of(self, cid: str, chat: str | None = None, limit: int = 500, offset: int = 0) -> list[dict]:
        return self.history.messages(cid, chat_id=chat, limit=limit, offset=offset)

    def stop(self) -> None:
        for name in ("member", "control"):
            e = getattr(self, name, None)
            if e is not None:
                e.stop()
        if getattr(self, "history", None) is not None:
            self.history.close()
        for name in ("t_member", "t_control"):
            t = getattr(self, name, None)
            if t is not None:
                t.close()
        for node, store in self.parts.pop("waku", []):
            node.stop()
            store.close()


def traffic_batch(seed: int, channels: int, authors: int, count: int, start: int, span: int) -> list[tuple]:
    """The demo's past chat, (content topic, envelope, timestamp ns, hash) per message: the same messages as
    `TrafficGenerator(seed, ...).messages(count, ...)`, so a worker process can make them."""
    from core.status.traffic import TrafficGenerator
    gen = TrafficGenerator(seed=seed, channels=channels, authors=authors)
    return [(m.content_topic, m.envelope, m.timestamp_ns, m.hash) for m in gen.messages(count, start=start, span=span)]


def run_headless(root: Path, timeout: float = 120.0, messages: int = 3000, weeks: int = 12) -> int:
    """The same flow as the window, printed: owner builds and announces, member fetches the latest, then all."""
    from core.node import events as E
    t0 = time.monotonic()
    d = DemoNodes(root, weeks=weeks, messages=messages, log=print).start()
    try:
        for label, eng in (("owner", d.control), ("member", d.member)):
            eng.bus.subscribe(lambda e, label=label: print(f"  [{label}] {e.name}"
                                                           + (f": {e.data.get('reason')}" if e.name == E.WAITING
                                                              else "")))
        d.add_owner()
        cid = d.control_cfg.community_id
        relayed = []
        d.member.bus.subscribe(lambda e: relayed.append(e) if e.name == E.MAGNETLINK_RECEIVED else None)
        d.add_member()
        d.run_engines()
        res = d.control.archive_now(cid).result(120)     # the signed link goes out over relay to the member
        print(f"demo: owner built {len(res.new_archive_ids) if res else 0} archives; magnet "
              f"{d.control.nodes[cid].magnet}")
        ok = _wait(lambda: d.member.state.archive_ids(cid, imported=True), timeout)
        print(f"demo: member imported the latest archive: {d.history.count(cid)} messages")
        d.member.set_download_policy(cid, "all").result(30)
        total = len(d.control.community_state(cid).archives)
        ok = ok and _wait(lambda: len(d.member.state.archive_ids(cid, imported=True)) >= total, timeout)
        print(f"demo: member imported all {total} archives: {d.history.count(cid)} messages "
              f"({time.monotonic() - t0:.1f} s)")
        print(f"demo: the member received {len(relayed)} archive link(s) over Waku (relay, or the store on start) from "
              f"{d.waku_owner.peer_id}")
        return 0 if ok and relayed else 1
    finally:
        d.stop()


def _wait(cond: Callable[[], object], timeout: float) -> bool:
    """Poll a condition at the engines' own tick rate (the engines run on their threads meanwhile)."""
    import threading
    ev = threading.Event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        ev.wait(0.2)
    return bool(cond())
