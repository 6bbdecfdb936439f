"""Failure is an answer: `archivist export` against a standalone master with NO worker exits 1 with one line once
--executor-timeout has passed without an executor, and writes nothing (neither OUT nor OUT.tmp).

The line comes only from the owner's watchdog (session.SparkOwner._watch_workers), so a watchdog that never fired
would leave the command waiting (pytest-timeout fails the test). That it fires at the timeout and never before is
tested on a clock the test moves (tests/unit/pipeline/test_executor_watch.py), not by timing this run. Here the
master's log shows the export's application registered and waiting with no executor, then unregistered."""
from __future__ import annotations

import pytest

from core.archive.build import build_archives
from core.pipeline.cluster import StandaloneCluster
from core.synth import synthesize

from .cli_runner import CliSession, daemon_env

pytestmark = [pytest.mark.spark]
TIMEOUT = 2   # seconds; configuration of the command, not a bound on the test's time


@pytest.mark.timeout(600)
def test_export_without_any_worker_fails_after_the_executor_timeout(tmp_path):
    runner = CliSession(log=tmp_path / "runner.log")
    try:
        runner.warm("spark://127.0.0.1:7077")   # the driver's JVM starts while the folder is built, the master starts
        r = synthesize(tmp_path / "db.sqlite", messages=60, weeks=2, seed=3)
        build_archives(tmp_path / "db.sqlite", r.community_id, [bytes.fromhex(t[2:]) for t in r.topics],
                       tmp_path / "d", tmp_path / "t", end=r.end)
        out = tmp_path / "out"
        env = daemon_env()
        with StandaloneCluster(tmp_path / "cluster", worker=False, env=env) as cluster:
            rc, stdout, stderr = runner.run(
                "export", str(tmp_path / "d" / r.community_id), "--out", str(out), "--master", cluster.master_url,
                "--executor-timeout", str(TIMEOUT), cwd=tmp_path)
        assert runner.close() == 0
    finally:
        runner.kill()
    assert rc == 1, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == (
        f"archivist export: no Spark worker is available at {cluster.master_url}: start a worker or use "
        "--master local[*]; nothing was written"), stderr[-3000:]
    assert "Traceback" not in stderr and stdout == ""
    assert not out.exists() and not (tmp_path / "out.tmp").exists()
    # The job did reach the master and wait there for an executor (not an early refusal): one application,
    # registered, never given an executor, and unregistered when the watchdog cancelled the job.
    log = (tmp_path / "cluster" / "master.log").read_text()
    assert log.count("Registered app archivist with ID") == 1, log[-3000:]
    assert "Launching executor" not in log and "Removing app" in log, log[-3000:]
    # the master's JVM ran with the tests' JVM options (StandaloneCluster(env=...), cli_runner.daemon_env)
    assert f"Picked up JAVA_TOOL_OPTIONS: {env['JAVA_TOOL_OPTIONS']}" in log, log[:3000]
