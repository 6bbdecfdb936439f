"""Failure is an answer: `archivist export` against a standalone master with NO worker exits 1 with one line once
--executor-timeout has passed without an executor, and writes nothing (neither OUT nor OUT.tmp)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from core.archive.build import build_archives
from core.pipeline.cluster import StandaloneCluster
from core.synth import synthesize

pytestmark = [pytest.mark.spark]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TIMEOUT = 15


def test_export_without_any_worker_fails_after_the_executor_timeout(tmp_path):
    r = synthesize(tmp_path / "db.sqlite", messages=300, weeks=2, seed=3)
    build_archives(tmp_path / "db.sqlite", r.community_id, [bytes.fromhex(t[2:]) for t in r.topics],
                   tmp_path / "d", tmp_path / "t", end=r.end)
    out = tmp_path / "out"
    with StandaloneCluster(tmp_path / "cluster", worker=False) as cluster:
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "core.cli", "export", str(tmp_path / "d" / r.community_id), "--out", str(out),
             "--master", cluster.master_url, "--executor-timeout", str(TIMEOUT)],
            capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})
        elapsed = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        f"archivist export: no Spark worker is available at {cluster.master_url}: start a worker or use "
        "--master local[*]; nothing was written"), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not out.exists() and not (tmp_path / "out.tmp").exists()
    # not before the timeout; well before "forever" (the JVM's start, ~10-40 s on this shared machine, included)
    assert TIMEOUT <= elapsed < TIMEOUT + 120, elapsed
    print(f"failed after {elapsed:.1f} s (timeout {TIMEOUT} s)")
