"""Cluster mode: a standalone master + worker on 127.0.0.1 from the installed pyspark runs the build job; a master
without a worker makes `spark-build` fail with the watchdog's one line instead of hanging at 0 % (a hang would run
into the subprocess's timeout and fail the test; the watchdog's timing rule is tested on a clock the test moves,
tests/unit/pipeline/test_executor_watch.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.archive.build import build_archives
from core.pipeline.cluster import StandaloneCluster
from core.synth import synthesize

from .helpers import folder_bytes

pytestmark = [pytest.mark.spark]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _spark_build(tmp_path, r, master, *extra):
    topic_args = [x for t in r.topics for x in ("--topic", t)]
    return subprocess.run(
        [sys.executable, "-m", "core.cli", "spark-build", "--master", master, "--db", str(tmp_path / "db.sqlite"),
         "--community-id", r.community_id, *topic_args, "--data-dir", str(tmp_path / "spark"), "--torrent-dir",
         str(tmp_path / "spark-t"), "--end", str(r.end), "--json", *extra],
        # cwd and PYTHONPATH: only the driver finds core/ in the checkout; executors get it from the shipped zip
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})


_PROBE = """
import json, sys
from core.pipeline.session import SparkOwner, SparkSettings
owner = SparkOwner(SparkSettings(master=sys.argv[1]))
def where(spark, job):
    def f(_):
        import sys, core
        return core.__file__, sys.executable
    return spark.sparkContext.parallelize([0], 1).map(f).collect()[0]
print(json.dumps(owner.submit(where).result(timeout=300)))
owner.close()
"""


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ARCHIVIST_SLOW") != "1", reason="starts four JVMs (~1-2 min); ARCHIVIST_SLOW=1")
def test_build_on_standalone_cluster_equals_reference(tmp_path):
    r = synthesize(tmp_path / "db.sqlite", messages=5000, weeks=3, seed=5)
    ref = build_archives(tmp_path / "db.sqlite", r.community_id, [bytes.fromhex(t[2:]) for t in r.topics],
                         tmp_path / "ref", tmp_path / "ref-t", end=r.end)
    with StandaloneCluster(tmp_path / "cluster", cores=2, memory="1g") as cluster:
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        out = _spark_build(tmp_path, r, cluster.master_url)
        assert out.returncode == 0, out.stderr[-3000:]
        # The executors really ran on the worker: it keeps an application folder with executor logs.
        logs = list((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))
        assert logs
        # ... with their own python3 and the shipped zip, nothing from the driver's checkout or /tmp log4j file.
        launch = "\n".join(p.read_text(errors="replace") for p in logs)
        assert "log4j2.configurationFile" not in launch and "archivist-spark-" not in launch
        # Executors import core from the shipped zip (it comes first on their sys.path), not from the checkout.
        probe = subprocess.run([sys.executable, "-c", _PROBE, cluster.master_url], capture_output=True, text=True,
                               timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})
        assert probe.returncode == 0, probe.stderr[-3000:]
        core_file, python = json.loads(probe.stdout.strip().splitlines()[-1])
        assert "archivist-core-" in core_file and ".zip" in core_file, core_file
        assert os.path.basename(python) == "python3", python   # the worker's python3 (PATH), not the driver's path
    res = json.loads(out.stdout)
    assert res["infohash"] == ref.infohash and res["new_archive_ids"] == ref.new_archive_ids
    assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
    assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")
    assert cluster.master.proc.poll() is not None and cluster.worker.proc.poll() is not None


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ARCHIVIST_SLOW") != "1", reason="starts two JVMs (~30-60 s); ARCHIVIST_SLOW=1")
def test_build_without_any_worker_fails_with_one_line(tmp_path):
    r = synthesize(tmp_path / "db.sqlite", messages=200, weeks=1, seed=7)
    with StandaloneCluster(tmp_path / "cluster", worker=False) as cluster:
        out = _spark_build(tmp_path, r, cluster.master_url, "--worker-timeout", "2")
    assert out.returncode == 1, out.stderr[-3000:]
    line = (f"archivist spark-build: no Spark worker is available at {cluster.master_url}: "
            "start a worker or use --master local[*]")
    assert out.stderr.strip().splitlines()[-1] == line, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert not (tmp_path / "spark-t").exists() or not list((tmp_path / "spark-t").iterdir())
    assert not list((tmp_path / "spark").glob("*/index")) if (tmp_path / "spark").exists() else True
    log = (tmp_path / "cluster" / "master.log").read_text()   # it waited as an application, with no executor
    assert log.count("Registered app archivist with ID") == 1 and "Launching executor" not in log, log[-3000:]
