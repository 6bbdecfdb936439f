"""Two `archivist node` processes side by side (own ports, own data directories) over a real Waku network
(embedded py-libp2p nodes) and real libtorrent sessions: the control node builds, seeds and announces; the member
gets the link (from the store or the relay), waits, downloads and imports."""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.process import stop_process
from core.status.traffic import TrafficGenerator, write_store
from core.storage.member_history import MemberHistory

ROOT = Path(__file__).resolve().parents[3]
WEEK = 7 * 24 * 3600


def _config(path: Path, data_dir: Path, role: str, gen, keyfile=None, waku_peers=(), torrent_peers=(),
            spark=False):
    chans = ", ".join(f'"{c.chat_id}"' for c in gen.channels)
    # settle 0.2 s (a real node: 20 s): the member still waits one tick for newer links before it downloads
    lines = [f'data_dir = "{data_dir}"', "settle_seconds = 0.2", "tick_seconds = 0.2",
             "[torrent]", 'listen = "127.0.0.1:0"', "local = true",
             "peers = [" + ", ".join(f'"{p}"' for p in torrent_peers) + "]",
             "[spark]", f"build = {'true' if spark else 'false'}",
             "[waku]", 'backend = "embedded"', "peers = [" + ", ".join(f'"{p}"' for p in waku_peers) + "]",
             "[[community]]", f'id = "{gen.community_id}"', f'role = "{role}"', f"channels = [{chans}]"]
    if keyfile:
        lines.append(f'key_file = "{keyfile}"')
    path.write_text("\n".join(lines) + "\n")
    return path


class NodeProcess:
    def __init__(self, config: Path):
        self.stderr = open(config.with_suffix(".stderr"), "w+")   # a file: a chatty child never blocks on it
        self.proc = subprocess.Popen([sys.executable, "-m", "core.cli", "node", "--config", str(config),
                                      "--log-level", "debug"],
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True, cwd=ROOT,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.events: list[dict] = []
        # a thread reads the lines: select() on the pipe then a buffered readline() would miss a second event that
        # arrived in the same read (it waits in Python's buffer while select() waits for new bytes)
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read_lines, daemon=True)
        self.reader.start()
        self.info = self.next_event(60)

    def _read_lines(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")                       # end of output: the node exited

    def next_event(self, timeout: float) -> dict:
        try:
            line = self.lines.get(timeout=max(timeout, 0))
        except queue.Empty:
            seen = "\n".join(json.dumps(e)[:400] for e in self.events[-8:])
            self.proc.send_signal(signal.SIGUSR1)    # the node dumps every thread's stack to its log...
            self.stop()                              # ...before it handles SIGTERM (the lower signal goes first)
            raise TimeoutError(f"no event from node in {timeout:.0f} s; last events:\n{seen}\nits log and stacks:\n"
                               f"{self.log_tail(20000)}")
        if not line:
            raise RuntimeError("node exited: " + self.log_tail())
        ev = json.loads(line)
        self.events.append(ev)
        return ev

    def log_tail(self, chars: int = 6000) -> str:
        with open(self.stderr.name) as f:
            return f.read()[-chars:]

    def wait_for(self, name: str, timeout: float = 90.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ev = self.next_event(deadline - time.monotonic())
            if ev.get("event") == name:
                return ev
        raise TimeoutError(name)

    def stop(self) -> None:
        stop_process(self.proc)
        self.reader.join(10)                     # reads to the end of the output, then stops
        self.proc.stdout.close()
        self.stderr.close()


@pytest.fixture
def nodes():
    started: list[NodeProcess] = []
    yield started
    for n in started:
        n.stop()


def test_two_headless_nodes_side_by_side(tmp_path, nodes):
    gen = TrafficGenerator(seed=21, channels=2, authors=5)
    now = int(time.time())
    cdir, mdir = tmp_path / "control", tmp_path / "member"
    cdir.mkdir()
    keyfile = tmp_path / "community.key"
    gen.community.save(keyfile)
    # history ending two hours ago: its three 7-day windows have closed, plus the one-hour grace period
    store = write_store(cdir / "messages.sqlite", 600, generator=gen, start=now - 3 * WEEK - 2 * 3600, span=3 * WEEK)
    # the control node builds on Spark, as a real node does by default
    control = NodeProcess(_config(tmp_path / "c.toml", cdir, "control", gen, keyfile, spark=True))
    nodes.append(control)
    control.wait_for("community.historyArchivesSeeding", 240)
    assert control.info["torrent_port"] > 0 and control.info["waku_listen"]
    member = NodeProcess(_config(tmp_path / "m.toml", mdir, "member", gen,
                                 waku_peers=control.info["waku_listen"][:1],
                                 torrent_peers=[f"127.0.0.1:{control.info['torrent_port']}"]))
    nodes.append(member)
    assert member.info["torrent_port"] != control.info["torrent_port"]
    member.wait_for("community.downloadingHistoryArchivesFinished", 120)
    names = [e["event"] for e in member.events]
    assert names.index("archivist.magnetlinkReceived") < names.index("community.downloadingHistoryArchivesStarted")
    h = MemberHistory(mdir / "history.sqlite")
    try:
        assert h.count(gen.community_id) == 600
        texts = {r["text"] for r in h.messages(gen.community_id, limit=1000)}
        assert texts == {m.text for m in gen.messages(600, start=now - 3 * WEEK - 2 * 3600, span=3 * WEEK)}
    finally:
        h.close()


KILLED_COUNT = 6000


@pytest.fixture(scope="module")
def seeding_control(tmp_path_factory):
    """One control node for both kill points (it only builds, seeds and answers store queries; each case has a
    member of its own): 6,000 signed messages of eight weeks ending two hours ago, written, built and announced
    once, not once a case."""
    tmp = tmp_path_factory.mktemp("seeding-control")
    gen = TrafficGenerator(seed=22, channels=2, authors=5)
    now = int(time.time())
    cdir = tmp / "control"
    cdir.mkdir()
    keyfile = tmp / "community.key"
    gen.community.save(keyfile)
    write_store(cdir / "messages.sqlite", KILLED_COUNT, generator=gen, start=now - 8 * WEEK - 2 * 3600,
                span=8 * WEEK)
    control = NodeProcess(_config(tmp / "c.toml", cdir, "control", gen, keyfile))
    try:
        control.wait_for("community.historyArchivesSeeding")
        yield gen, control
    finally:
        control.stop()


@pytest.mark.xdist_group("headless-kill")     # both cases on one xdist worker: one seeding_control for both
@pytest.mark.parametrize("kill_on", ["community.downloadingHistoryArchivesStarted",
                                     "community.importingHistoryArchiveMessages"])
def test_member_killed_mid_way_completes_after_restart(tmp_path, nodes, seeding_control, kill_on):
    gen, control = seeding_control
    mdir = tmp_path / "member"
    count = KILLED_COUNT
    mconf = _config(tmp_path / "m.toml", mdir, "member", gen, waku_peers=control.info["waku_listen"][:1],
                    torrent_peers=[f"127.0.0.1:{control.info['torrent_port']}"])
    member = NodeProcess(mconf)
    member.wait_for(kill_on, 120)
    member.proc.kill()                      # no clean shutdown: SIGKILL
    member.proc.wait()
    member.stop()                           # its output read to the end, its files closed
    member = NodeProcess(mconf)
    nodes.append(member)
    member.wait_for("community.downloadingHistoryArchivesFinished", 180)
    import sqlite3
    db = sqlite3.connect(mdir / "history.sqlite")
    try:
        n, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT hash) FROM history_messages").fetchone()
    finally:
        db.close()
    assert n == distinct == count
