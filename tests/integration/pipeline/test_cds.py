"""The driver's JVM really loads Spark's classes from the run's class-data archive (made by tests/conftest.py with the
product's maker), and a damaged archive is ignored: the session starts without it and says why. One driver JVM per
test, in a child process (its own -Xlog:class+load file; this process's session stays as it is)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.pipeline import cds
from tests.conftest import make_shared_archive

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[3]
TOP = "source: shared objects file (top)"

CHILD = r'''
import json, logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
from core.pipeline import cds, jvm
from core.pipeline.session import DRIVER_JVM_OPTIONS, SparkOwner, SparkSettings
owner = SparkOwner(SparkSettings(master="local[1]",
                                 driver_jvm_options=f"{DRIVER_JVM_OPTIONS} -Xlog:class+load=info:file={sys.argv[1]}"))
rows = owner.submit(lambda spark, job: spark.range(100).selectExpr("id % 7 AS k").groupBy("k").count().count()
                    ).result(600)
path, key, why = cds.state(jvm.launched_conf())
owner.close()
print(json.dumps({"rows": rows, "path": str(path), "why": why}))
'''


def run_driver(tmp_path: Path, archive: Path) -> tuple[dict, str, list[str]]:
    log = tmp_path / "class-load.log"
    r = subprocess.run([sys.executable, "-c", CHILD, str(log)], capture_output=True, text=True, timeout=600,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), cds.ENV: str(archive)})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr, log.read_text().splitlines()


def shared_archive() -> Path:
    if cds.setting() == "off":
        pytest.skip("ARCHIVIST_SPARK_CDS=off: this run uses no class-data archive")
    failed = make_shared_archive()       # tests/conftest.py started it at the run's start; wait for it here
    assert failed is None, f"the product's maker could not make the run's archive: {failed}"
    path = Path(os.environ[cds.ENV])
    assert cds.check(path, cds.state({"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"})[1]) is None, \
        f"the run's archive {path} was not made (tests/conftest.py)"
    return path


def test_the_driver_loads_sparks_classes_from_the_archive(tmp_path):
    archive = shared_archive()
    out, _, lines = run_driver(tmp_path, archive)
    assert out == {"rows": 7, "path": str(archive), "why": None}
    # Spark's classes read from a file (the archive or a jar; not the lambda proxies the JVM generates, whose
    # source is their host class): most come from the archive, the SparkContext among them; the rest are what
    # this job uses and the warm-up's did not (92 % here, 2026-11-27)
    spark = [ln for ln in lines if " org.apache.spark." in ln and (TOP in ln or "source: file:" in ln)]
    shared = [ln for ln in spark if TOP in ln]
    assert len(shared) > 1000 and len(shared) > 0.8 * len(spark), (len(shared), len(spark))
    assert any(" org.apache.spark.SparkContext " in ln for ln in shared)


def test_a_damaged_archive_is_ignored_and_said_so(tmp_path):
    """A truncated copy (what a full disk or a killed copy leaves) beside its sidecar: the session starts
    without it, no class comes from it, and the reason is logged and left for the maker (which remakes it)."""
    src = shared_archive()
    damaged = tmp_path / "driver.jsa"
    with open(src, "rb") as f, open(damaged, "wb") as g:
        g.write(f.read(8 << 20))
    shutil.copyfile(cds.sidecar(src), cds.sidecar(damaged))
    out, err, lines = run_driver(tmp_path, damaged)
    assert out["rows"] == 7 and out["path"] == str(damaged) and "damaged" in out["why"]
    assert f"Spark class-data archive {damaged} ignored: size {8 << 20}" in err
    assert not any(TOP in ln for ln in lines)
    assert sum(" org.apache.spark.SparkContext " in ln for ln in lines) == 1   # the session did start


def test_the_test_clusters_daemons_map_the_archive(tmp_path):
    """The tests' Spark daemons (cli_runner.daemon_env) map the run's archive once it is whole: their class path is
    the driver's. spark-class's launcher JVM refuses it, and its warning must not reach the stdout that spark-class
    reads as the command: the master and the worker both start and the worker registers."""
    from core.pipeline.cluster import StandaloneCluster

    from .cli_runner import daemon_env
    archive = shared_archive()
    env = daemon_env()
    assert f"{cds.OPTION}{archive} " in env["JAVA_TOOL_OPTIONS"], env
    with StandaloneCluster(tmp_path / "cluster", cores=1, memory="512m", env=env) as cluster:
        for daemon in (cluster.master, cluster.worker):
            with open(f"/proc/{daemon.proc.pid}/maps") as f:
                assert str(archive) in f.read(), daemon.log_path
    for name in ("master", "worker"):
        log = (tmp_path / "cluster" / f"{name}.log").read_text()
        assert "Unable to use shared archive" in log, log[:3000]     # the launcher's warning, in the log (stderr)
