"""From magnet received to history visible, through the engines (two libtorrent sessions on 127.0.0.1):
the member accepts the link, fetches metadata, the index and all archives, and imports every message: first
window visible, every window visible (rows first), then every author recovered (the import's second pass).
Reference in the same run: a plain SQLite bulk insert of the same number of rows; and status-go's pacing of
10 messages per second while its window has focus (a constant: it cannot run here).

Default (`make test`'s check that the harness runs): 5k messages. ARCHIVIST_SLOW=1: 1M
(ARCHIVIST_BENCH_NODE_MESSAGES overrides)."""
import hashlib
import os
import sqlite3
import time

from core.archive.codec import ArchiveMessage
from core.node import events as E
from core.node.clock import FakeClock
from core.node.community import CommunityConfig
from core.node.engine import Engine
from core.node.hydrate import reference_hydrator
from core.node.transport import LocalHub
from core.status.traffic import TrafficGenerator, to_archive_message
from core.storage import waku_messages
from core.storage.member_history import MemberHistory
from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings
from tests.bench.table import record

N = int(os.environ.get("ARCHIVIST_BENCH_NODE_MESSAGES",
                       1_000_000 if os.environ.get("ARCHIVIST_SLOW") == "1" else 5_000))
WEEK = 7 * 24 * 3600
START = 1_700_000_000


def _fill_store(path, gen, n, weeks, distinct=5000):
    """n real Status messages: `distinct` (5,000) generated ones replayed with new timestamps and hashes (decoding
    cost is per message, so replaying keeps the import work honest while generation stays fast)."""
    base = [to_archive_message(m) for m in gen.messages(min(n, distinct), start=0, span=1000)]
    con = waku_messages.connect(path)
    span = weeks * WEEK
    batch = []
    for i in range(n):
        m = base[i % len(base)]
        ts = START + i * span // n
        batch.append(ArchiveMessage(m.sig, ts, m.topic, m.payload, m.padding,
                                    hashlib.sha256(m.hash + i.to_bytes(8, "big")).digest()))
        if len(batch) == 50_000:
            waku_messages.insert_messages(con, batch)
            batch.clear()
    waku_messages.insert_messages(con, batch)
    con.commit()
    con.close()


def test_magnet_to_history(tmp_path):
    weeks = max(4, N // 25_000)
    gen = TrafficGenerator(seed=3, channels=3, authors=20)
    (tmp_path / "c").mkdir()
    (tmp_path / "m").mkdir()
    _fill_store(tmp_path / "c" / "messages.sqlite", gen, N, weeks)
    key = tmp_path / "k.json"
    gen.community.save(key)
    chats = [c.chat_id for c in gen.channels]
    clock = FakeClock(START + weeks * WEEK + 3600 + 60)   # every whole window has closed, plus the grace period
    hub = LocalHub()
    tc = TorrentService(TorrentSettings.loopback(), tmp_path / "cs").start()
    tm = TorrentService(TorrentSettings.loopback(), tmp_path / "ms").start()
    control = Engine(tmp_path / "c", clock=clock, transport=hub, torrents=tc)
    history = MemberHistory(tmp_path / "m" / "history.sqlite")
    member = Engine(tmp_path / "m", clock=clock, transport=hub, torrents=tm, settle=0,
                    hydrator=reference_hydrator(history), peers=(("127.0.0.1", tc.listen_port),))
    marks: dict[str, float] = {}

    def mark(ev):            # the member's events: when the first window, then all of them, became visible
        if ev.name == E.IMPORTING_HISTORY_ARCHIVE_MESSAGES and ev.data["done"] == 1:
            marks.setdefault("first", time.perf_counter())
        if ev.name == E.PROGRESS and ev.data.get("job") == "authors" and ev.data["done"] == 0:
            marks.setdefault("visible", time.perf_counter())
    member.bus.subscribe(mark)
    try:
        t = time.perf_counter()
        control.add_community(CommunityConfig(gen.community_id, "", "control", chats, key_file=str(key))).result(3600)
        t_build = time.perf_counter() - t
        t0 = time.perf_counter()
        member.add_community(CommunityConfig(gen.community_id, "", "member", chats)).result(60)
        node = member.nodes[gen.community_id]
        member.tick_all()[0].result(60)
        assert node.job is not None and node.job.wait(3600), node.job.snapshot()
        t_download = time.perf_counter() - t0
        member.tick_all()[0].result(36000)
        t_total = time.perf_counter() - t0
        assert history.count(gen.community_id) == N and history.pending_author_count(gen.community_id) == 0
        t_first, t_visible = marks["first"] - t0, marks["visible"] - t0
    finally:
        member.stop()
        control.stop()
        history.close()
        tm.close()
        tc.close()
    # reference: a plain bulk insert of N rows of the same shape
    ref = sqlite3.connect(tmp_path / "ref.sqlite")
    ref.execute("CREATE TABLE t (community_id TEXT, id TEXT PRIMARY KEY, chat_id TEXT, topic TEXT, ts INT, "
                "clock INT, author TEXT, text TEXT, ct INT, at INT, src TEXT)")
    t = time.perf_counter()
    ref.executemany("INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (("c", f"0x{i:064x}", "chat", "0x00000000", i, i, "0x04" + "00" * 64, "hello world", 1, 1,
                      "archive") for i in range(N)))
    ref.commit()
    t_ref = time.perf_counter() - t
    ref.close()
    print(f"\nNODE magnet -> history, {N} messages, {weeks} weeks: control build {t_build:.1f} s")
    print(f"  member: download {t_download:.1f} s, first window visible {t_first:.1f} s, magnet->history "
          f"visible {t_visible:.1f} s = {N / t_visible:,.0f} msg/s, authors done {t_total:.1f} s "
          f"(load {os.getloadavg()[0]:.1f})")
    print(f"  reference bulk insert of {N} rows: {t_ref:.2f} s = {N / t_ref:,.0f} rows/s")
    print(f"  status-go pacing (10 msg/s while focused): {N / 10:,.0f} s = {N / 10 / 3600:.1f} h")
    record("import", f"magnet -> history visible, {N:,} messages (two engines, loopback)", t_visible, "s",
           "status-go's 10 msg/s pacing", N / 10, "< 60 s at 1M")
    record("import", f"magnet -> first window visible, {N:,} messages", t_first, "s", "", None, "< 5 s")
    record("import", f"magnet -> every author recovered, {N:,} messages", t_total, "s", "history visible",
           t_visible)
