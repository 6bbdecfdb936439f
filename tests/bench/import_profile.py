"""Where the import's first pass spends its time (issue 17): `python -m tests.bench.import_profile N [DIR]
[--cprofile [--cpu]] [--read-ahead yes|no]` builds a community folder of N real signed messages in DIR (kept there
and reused; default /tmp/archivist-import-N), runs import_folder (rows first) into a new history database and
prints when the history was visible, the writing thread's CPU time and its wait for a CPU (/proc schedstat: on a
loaded machine the writer waits for a core more than it runs), the process's CPU time, each window's write
(start-end, seconds), and with --cprofile the top 10 functions of the importer's main thread by own time (the read
ahead and the decoding run in another thread and a worker process: not in it); `--cpu` times the profile by the
thread's CPU instead of the wall clock (on a loaded machine the wall clock charges the waits for a CPU to whichever
function was running), and `--read-ahead yes|no` forces the read ahead on or off (default:
core.node.hydrate.read_ahead_pays decides). The authors pass is not run."""
from __future__ import annotations

import cProfile
import os
import pstats
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

from core.archive.build import build_archives
from core.node.import_cli import import_folder
from core.status.traffic import TrafficGenerator
from core.storage.member_history import MemberHistory
from core.torrent.selection import Selection
from tests.bench.test_node_bench import START, WEEK, _fill_store


def _queued() -> float:
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


class _Visible(Exception):
    """Raised from the authors' first progress report: every window is written."""


def build(n: int, root: Path) -> Path:
    """The community folder of n real signed messages in root (made once, then reused)."""
    weeks = max(2, n // 25_000)
    gen = TrafficGenerator(seed=3, channels=3, authors=20)
    folder = root / "d" / gen.community_id
    if not (folder / "index").exists():
        root.mkdir(parents=True, exist_ok=True)
        _fill_store(root / "m.sqlite", gen, n, weeks)
        con = sqlite3.connect(root / "m.sqlite")
        topics = [bytes.fromhex(t[2:]) for (t,) in con.execute("SELECT DISTINCT topic FROM waku_messages")]
        con.close()
        build_archives(root / "m.sqlite", gen.community_id, topics, root / "d", root / "t",
                       end=START + (weeks + 1) * WEEK, now=lambda: START + (weeks + 2) * WEEK)
    return folder


def main(argv: list[str]) -> None:
    n = int(argv[0])
    root = Path(argv[1]) if len(argv) > 1 and not argv[1].startswith("--") else Path(f"/tmp/archivist-import-{n}")
    gen = TrafficGenerator(seed=3, channels=3, authors=20)
    folder = build(n, root)
    writes: list[tuple[float, float]] = []
    cpu = [0.0, 0.0]
    write = MemberHistory.import_window

    def timed(self, *a, **k):
        t, c, q = time.perf_counter(), time.thread_time(), _queued()
        try:
            return write(self, *a, **k)
        finally:
            cpu[0] += time.thread_time() - c
            cpu[1] += _queued() - q
            writes.append((t - t0, time.perf_counter() - t0))
    MemberHistory.import_window = timed

    def visible(done, total):
        raise _Visible
    prof = None
    if "--cprofile" in argv:
        prof = cProfile.Profile(time.thread_time) if "--cpu" in argv else cProfile.Profile()
    kw = {} if "--read-ahead" not in argv else {"read_ahead": argv[argv.index("--read-ahead") + 1] == "yes"}
    with tempfile.TemporaryDirectory() as tmp:
        c0, t0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        try:
            import_folder(folder, Path(tmp) / "h.sqlite", gen.community_id, Selection("all"), authors_progress=visible,
                          **kw)
        except _Visible:
            pass
        if prof:
            prof.disable()
        took, process = time.perf_counter() - t0, time.process_time() - c0
    print(f"import of {n:,} messages, {len(writes)} windows, rows first (load {os.getloadavg()[0]:.1f}): history "
          f"visible after {took:.2f} s; the writer: {sum(b - a for a, b in writes):.2f} s writing, {cpu[0]:.2f} s "
          f"CPU, {cpu[1]:.2f} s waiting for a CPU; the process's CPU {process:.2f} s")
    print("  windows written (start-end):", " ".join(f"{a:.1f}-{b:.1f}" for a, b in writes))
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(10)


if __name__ == "__main__":
    main(sys.argv[1:])
