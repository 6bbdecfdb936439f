"""Where the import's first pass spends its time, phase by phase, beside its floor (issue 17):
`python -m tests.bench.import_phases N [DIR] [--read-ahead yes|no]` builds (or reuses) the community folder of N
real signed messages that tests/bench/import_profile.py builds in DIR, runs import_folder rows first until the
history is visible, with no worker process running before it, and prints: when the first row was written, the
windows' writing time and the writer's CPU, the waits between windows, `end_import` (the chat index made), the
pending count, the CPU of each phase (reading, checking and decoding the windows; writing them; end_import; the
rest), each window's wait and writing time, the CPU of each of the importer's threads (the writer, the read ahead,
the pool's result and feeder threads) and of its RowPool workers and forkserver (/proc), and the CPU until visible;
then the floor (tests/bench/floor_import.py) of the same rows, wall and CPU, and the ratios (the importer's own CPU
against the floor's too: what a free core for the worker leaves on the path).
`--read-ahead` forces the read ahead on or off (default: core.node.hydrate.read_ahead_pays decides).
To compare with another tree, run this file with PYTHONPATH set to that tree (copy this file and floor_import.py
there if it has none)."""
from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import core.history_import as HI
import core.node.hydrate as HY
from core.node import import_cli
from core.status.traffic import TrafficGenerator
from core.storage import history as H
from core.storage.member_history import MemberHistory
from core.torrent.selection import Selection
from tests.bench.floor_import import floor
from tests.bench.import_profile import build
from tests.bench.test_import_bench import _cold, _pool_cpu


def _threads_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process by its name (/proc/self/task/<native id>/stat): the
    writer (MainThread), the read ahead's thread, and the pool's own threads (its manager, which unpickles the
    results, and the call queue's feeder, which pickles the calls)."""
    out: dict[str, float] = {}
    for t in threading.enumerate():
        try:
            with open(f"/proc/self/task/{t.native_id}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = t.name.split("-")[0] if t.name.startswith("Thread-") else t.name.rsplit("_", 1)[0]
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


class _Visible(Exception):
    """Raised from the authors' first progress report: every window is written."""


def _timed(owner, name: str, log: list) -> None:
    f = getattr(owner, name)

    def timed(*a, **k):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return f(*a, **k)
        finally:
            log.append((name, t, time.perf_counter(), time.thread_time() - c))
    setattr(owner, name, timed)


def main(argv: list[str]) -> None:
    n = int(argv[0])
    root = Path(argv[1]) if len(argv) > 1 and not argv[1].startswith("--") else Path(f"/tmp/archivist-import-{n}")
    ahead = None if "--read-ahead" not in argv else argv[argv.index("--read-ahead") + 1] == "yes"
    gen = TrafficGenerator(seed=3, channels=3, authors=20)
    folder = build(n, root)
    log: list = []
    _timed(H, "import_window", log)
    _timed(HY, "read_window_preview", log)
    _timed(MemberHistory, "end_import", log)
    _timed(MemberHistory, "pending_author_count", log)
    kw = {} if ahead is None else {"read_ahead": ahead}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h.sqlite"
        _cold()
        seen: list = []

        def visible(done, total):
            seen.extend((time.process_time() - c0 + _pool_cpu(), HI.shared_pool().running, _threads_cpu(),
                         _pool_cpu()))
            raise _Visible
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            import_cli.import_folder(folder, db, gen.community_id, Selection("all"), authors_progress=visible, **kw)
        except _Visible:
            pass
        took = time.perf_counter() - t0
        _cold()
        wins = [e for e in log if e[0] == "import_window"]
        end = next(e for e in log if e[0] == "end_import")
        count = next(e for e in log if e[0] == "pending_author_count")
        reads = [e for e in log if e[0] == "read_window_preview"]
        waits = sum(b[1] - a[2] for a, b in zip(wins, wins[1:]))
        print(f"import of {n:,} messages, {len(wins)} windows, rows first (load {os.getloadavg()[0]:.1f}; next "
              f"window decoded in a worker: {seen[1]}): visible after {took:.2f} s, CPU until then {seen[0]:.2f} s")
        print(f"  first row written at {wins[0][1] - t0:.2f} s; windows {sum(b - a for _, a, b, _ in wins):.2f} s "
              f"(writer CPU {sum(e[3] for e in wins):.2f} s); waits between windows {waits:.2f} s; end_import "
              f"{end[2] - end[1]:.2f} s; pending count {count[2] - count[1]:.2f} s")
        print("  each window: wait before it, writing (wall / writer CPU): " + ", ".join(
            f"{b[1] - a[2]:.2f} + {b[2] - b[1]:.2f}/{b[3]:.2f}" for a, b in zip([(0, 0, t0, 0)] + wins, wins)))
        print(f"  CPU by phase: windows read, checked and decoded {sum(e[3] for e in reads):.2f} s (in this process's "
              f"threads; a worker's decoding is not in it), windows written {sum(e[3] for e in wins):.2f} s, "
              f"end_import {end[3]:.2f} s, the rest (a worker's decoding too) "
              f"{seen[0] - sum(e[3] for e in reads + wins) - end[3]:.2f} s")
        own = seen[0] - seen[3]
        print("  CPU by thread until visible: " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(seen[2].items()))
              + f"; worker processes + forkserver {seen[3]:.2f} s")
        con = sqlite3.connect(db)
        rows = con.execute("SELECT * FROM history_messages ORDER BY rowid").fetchall()
        con.close()
        assert len(rows) == n
        f_wall, f_cpu = floor(Path(tmp) / "floor.sqlite", db, rows)
        print(f"  floor (floor_import.py, indexes after): {f_wall:.2f} s, CPU {f_cpu:.2f} s; visible / floor "
              f"{took / f_wall:.2f}x, CPU / floor's {seen[0] / f_cpu:.2f}x, this process's CPU / floor's "
              f"{own / f_cpu:.2f}x (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main(sys.argv[1:])
