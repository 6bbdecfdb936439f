"""Shared by the build benchmarks: a store made by core.synth (5 channels, ~25k messages a week, as in issue 17's
runs), and `build` and its floor (floor_build.py) each run in a fresh child process.

ARCHIVIST_BENCH_STORE_DIR=DIR keeps each store as DIR/synth-N.sqlite with its SynthResult beside it
(synth-N.json, written only once the store is complete) and reuses it in later runs: the 10M store takes 10-20
min to make. Nothing in DIR is deleted; `python -m tests.bench.build_bench N` makes one store there ahead of a run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from core.synth import SynthResult, synthesize

ROOT = Path(__file__).resolve().parents[2]


def store(path: Path, n: int) -> SynthResult:
    keep = os.environ.get("ARCHIVIST_BENCH_STORE_DIR")
    if not keep:
        return synthesize(path, messages=n, weeks=max(4, n // 25_000), channels=5, seed=1)
    path, meta = Path(keep) / f"synth-{n}.sqlite", Path(keep) / f"synth-{n}.json"
    if meta.exists() and path.exists():
        return SynthResult(**json.loads(meta.read_text()))
    path.parent.mkdir(parents=True, exist_ok=True)
    meta.unlink(missing_ok=True)
    s = synthesize(path, messages=n, weeks=max(4, n // 25_000), channels=5, seed=1)
    meta.write_text(json.dumps(s.to_json()))
    return s


def child(*args: str) -> dict:
    """Run floor_build.py in a new process; its JSON line, plus the whole process' wall time."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "tests.bench.floor_build", *map(str, args)], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=3600).stdout
    return {**json.loads(out.strip().splitlines()[-1]), "process_seconds": time.perf_counter() - t0}


def run_build(s, out: Path) -> dict:
    return child("build", s.path, out, s.community_id, s.end, *(t[2:] for t in s.topics))


def run_floor(s, out: Path, n_bytes: int) -> dict:
    return child("floor", s.path, out, n_bytes)


if __name__ == "__main__":   # make (or find) the kept store of N messages: ARCHIVIST_BENCH_STORE_DIR must be set
    if not os.environ.get("ARCHIVIST_BENCH_STORE_DIR"):
        sys.exit("set ARCHIVIST_BENCH_STORE_DIR")
    t0 = time.perf_counter()
    made = store(Path(), int(sys.argv[1]))
    print(json.dumps({**made.to_json(), "seconds": round(time.perf_counter() - t0, 1)}))
