"""Shared by the build benchmarks: a store made by core.synth (5 channels, ~25k messages a week, as in issue 17's
runs), and `build` and its floor (floor_build.py) each run in a fresh child process."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from core.synth import synthesize

ROOT = Path(__file__).resolve().parents[2]


def store(path: Path, n: int):
    return synthesize(path, messages=n, weeks=max(4, n // 25_000), channels=5, seed=1)


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
