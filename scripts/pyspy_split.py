"""Where a `make test` run's Python CPU went, from py-spy's raw output (`--subprocesses --format raw`).

py-spy is not a project dependency; record a run with it from a venv of its own (docs/QUALITY.md, "Where the
Python CPU went"), then:

    python scripts/pyspy_split.py prof.raw [--rows N]

prints (1) the samples of each kind of process (xdist worker, offload worker, Spark's Python daemons and workers,
CLI children ...), with the share spent importing modules and the number of processes; (2) the xdist workers'
samples by the test file (or fixture file) on their stack; (3) the frames the workers spent their own time in.
A sample is one thread seen running at one tick; idle threads (waiting on a lock, a socket or a pipe) are left out,
as py-spy leaves out what it can tell is idle, so the figures compare places within one run, not runs.
"""
from __future__ import annotations

import argparse
import collections
import re

PROCESS = re.compile(r'process (\d+):"')
IDLE = ("Condition.wait", "EpollIOManager.get_events", "Popen2IO.read", "_PollLikeSelector.select",
        "SocketIO.readinto", "FinalizerWorker")
VENV_PYTHON = re.compile(r"\S*/\.venv/bin/python")


def kind_of(cmd: str) -> str:
    cmd = VENV_PYTHON.sub("VPY", cmd)
    if not cmd:
        return "the process py-spy started (pytest's controller)"
    if "exec(eval(sys.stdin" in cmd:
        return "xdist worker"
    if "offload import _child_main" in cmd:
        return "offload worker (core/node/offload.py)"
    if "forkserver import main" in cmd:
        return "multiprocessing fork server and its children"
    m = re.search(r"-m (\S+)(?: (\S+))?", cmd)
    if m and m.group(1) in ("pyspark.daemon", "core.pipeline.worker_daemon"):
        return f"{cmd.split(' -m ')[0]} -m {m.group(1)} {m.group(2) or ''}".strip()
    if m and m.group(1) == "core.cli":
        return f"archivist {m.group(2) or ''}".strip()
    return cmd[:70]


def split(path: str):
    kinds, imports, pids = collections.Counter(), collections.Counter(), collections.defaultdict(set)
    by_test, own = collections.Counter(), collections.Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not n.isdigit():
            continue
        found = list(PROCESS.finditer(stack))
        if not found:
            continue
        last = found[-1]
        rest = stack[last.end():]
        end = rest.find('";')                   # a command line may hold ';' itself: it ends at '";'
        cmd, frames = (rest[:end], rest[end + 2:].split(";")) if end >= 0 else (rest, [])
        frames = [f for f in frames if not f.startswith("thread ")]
        if not frames or frames[-1].startswith(IDLE):
            continue
        count, kind = int(n), kind_of(cmd)
        kinds[kind] += count
        pids[kind].add(last.group(1))
        if any("_bootstrap" in f or "zipimport" in f for f in frames):
            imports[kind] += count
        if kind == "xdist worker":
            test = next((re.search(r"\((tests/[^:]+)", f).group(1) for f in frames if "(tests/" in f), None)
            by_test[test or ("[collection]" if any("collect" in f for f in frames) else "[other]")] += count
            own[re.sub(r":\d+\)$", ")", frames[-1])] += count
    return kinds, imports, pids, by_test, own


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("raw")
    p.add_argument("--rows", type=int, default=25)
    a = p.parse_args()
    kinds, imports, pids, by_test, own = split(a.raw)
    total = sum(kinds.values())
    print(f"{total} samples of running Python threads\n\nby kind of process: samples, share, importing, processes")
    for k, v in kinds.most_common(a.rows):
        print(f"{v:8d} {100 * v / total:5.1f}% {100 * imports[k] / v:4.0f}% {len(pids[k]):5d}  {k}")
    workers = sum(by_test.values()) or 1
    print(f"\nthe xdist workers' {workers} samples by test file")
    for k, v in by_test.most_common(a.rows):
        print(f"{v:8d} {100 * v / workers:5.1f}%  {k}")
    print("\nthe frames the xdist workers ran in themselves")
    for k, v in own.most_common(a.rows):
        print(f"{v:8d} {100 * v / workers:5.1f}%  {k[:110]}")


if __name__ == "__main__":
    main()
