"""Two engines (control + member) on 127.0.0.1: real libtorrent sessions, real SQLite, fake clock."""
from dataclasses import dataclass

import pytest

from core.node.clock import FakeClock
from core.node.community import CommunityConfig
from core.node.engine import Engine
from core.node.hydrate import reference_hydrator
from core.node.transport import LocalHub
from core.status.traffic import TrafficGenerator
from core.storage.member_history import MemberHistory
from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings

WEEK = 7 * 24 * 3600
HISTORY_START = 1_750_000_000


@dataclass
class Pair:
    clock: FakeClock
    hub: LocalHub
    gen: TrafficGenerator
    control: Engine
    member: Engine
    history: MemberHistory
    control_cfg: CommunityConfig
    member_cfg: CommunityConfig
    sent: list


def wait_until(cond, timeout=60.0, poll=None):
    """Wait on a condition by ticking the engines' queues (no sleeps: each check waits on the queue's future)."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        if poll:
            poll()
    return cond()


def _pair_generator() -> TrafficGenerator:
    return TrafficGenerator(seed=5, channels=3, authors=8)


@pytest.fixture(scope="session")
def _pair_traffic():
    """The pair's 1,500 messages (signed and encrypted: ~0.5 s of CPU), made once per test process: the messages
    are a function of the generator's arguments alone, and frozen."""
    return tuple(_pair_generator().messages(1500, start=HISTORY_START, span=6 * WEEK))


@pytest.fixture
def pair(tmp_path, _pair_traffic):
    clock = FakeClock(HISTORY_START)
    hub = LocalHub()
    gen = _pair_generator()
    keyfile = tmp_path / "community.key"
    gen.community.save(keyfile)
    chats = [c.chat_id for c in gen.channels]
    ccfg = CommunityConfig(gen.community_id, "Sample", "control", chats, key_file=str(keyfile))
    mcfg = CommunityConfig(gen.community_id, "Sample", "member", chats)
    t_control = TorrentService(TorrentSettings.loopback(), tmp_path / "c" / "torrent-state").start()
    t_member = TorrentService(TorrentSettings.loopback(metadata_timeout=10.0), tmp_path / "m" / "torrent-state").start()
    control = Engine(tmp_path / "c", clock=clock, transport=hub, torrents=t_control)
    history = MemberHistory(tmp_path / "m" / "history.sqlite")
    member = Engine(tmp_path / "m", clock=clock, transport=hub, torrents=t_member,
                    hydrator=reference_hydrator(history), peers=(("127.0.0.1", t_control.listen_port),))
    sent = list(_pair_traffic)
    yield Pair(clock, hub, gen, control, member, history, ccfg, mcfg, sent)
    member.stop()
    control.stop()
    history.close()
    t_member.close()
    t_control.close()


def start_control(pair: Pair) -> None:
    """The control node runs from the first message on: live traffic reaches its store over the relay; six
    weeks later (plus the one-hour grace period and a little: the first window starts at the oldest message, a few
    minutes after HISTORY_START) its schedule has archived everything in six whole windows and it has announced
    the magnet link."""
    cid = pair.control_cfg.community_id
    pair.control.add_community(pair.control_cfg).result(60)
    for m in pair.sent:
        pair.hub.publish(m.content_topic, m.envelope, m.timestamp_ns)
    pair.control.submit(cid, lambda: None).result(60)  # the queue has stored every message
    pair.clock.set(HISTORY_START + 6 * WEEK + 2 * 3600)
    pair.control.tick_all()[0].result(120)

