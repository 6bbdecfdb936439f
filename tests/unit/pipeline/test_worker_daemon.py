"""Local mode's Python daemon (core/pipeline/worker_daemon.py) without Spark: which zips it moves behind the
installed packages, what it imports before forking, and where the session uses it (local mode only)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark

from core.pipeline import worker_daemon as wd
from core.pipeline.session import WORKER_DAEMON, SparkSettings
from core.pipeline.spark_encode import PLANS, warm_up_plans

ROOT = Path(__file__).resolve().parents[3]
INSTALLED = Path(pyspark.__file__).parent            # the venv's pyspark (the pip package carries the zips)
SITE = str(INSTALLED.parent)
LIB = INSTALLED / "python" / "lib"


def spark_path() -> list[str]:
    """The path Spark gives a Python daemon: its zips first (PythonWorkerFactory), then the executor's PYTHONPATH."""
    zips = [str(LIB / "pyspark.zip"), *sorted(str(p) for p in LIB.glob("py4j-*-src.zip"))]
    assert len(zips) == 2 and all(os.path.isfile(z) for z in zips), zips
    return zips


def fake_site(base: Path, py4j: str | None = "0.10.9.9") -> Path:
    """A site folder with a pyspark package carrying its zips, and py4j installed at version `py4j`."""
    site = base / "site"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (lib / "pyspark.zip").write_bytes(b"")
    (lib / "py4j-0.10.9.9-src.zip").write_bytes(b"")
    if py4j:
        (site / "py4j").mkdir()
        (site / f"py4j-{py4j}.dist-info").mkdir()
    return site


def test_the_zips_inside_an_installed_pyspark_go_behind_it(tmp_path):
    site = fake_site(tmp_path)
    lib = site / "pyspark" / "python" / "lib"
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), "/elsewhere", str(site)]
    moved = wd.prefer_installed_pyspark(path)
    assert moved == [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    assert path == ["/elsewhere", str(site), *moved]


def test_zips_that_are_not_the_installed_packages_stay_first(tmp_path):
    site = fake_site(tmp_path, py4j="0.10.9.7")          # another py4j than the zip's
    lib = site / "pyspark" / "python" / "lib"
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), str(site)]
    assert wd.prefer_installed_pyspark(path) == [str(lib / "pyspark.zip")]
    assert path[0] == str(lib / "py4j-0.10.9.9-src.zip")
    # A Spark distribution's zips (SPARK_HOME=/opt/spark): no installed package holds them.
    spark_home = tmp_path / "spark"
    (spark_home / "python" / "lib").mkdir(parents=True)
    dist = [str(spark_home / "python" / "lib" / "pyspark.zip"), str(site)]
    assert wd.prefer_installed_pyspark(dist) == [] and dist[0].startswith(str(spark_home))
    # The installed package's own zips, but its site folder is not on the path: nothing to fall back to.
    alone = [str(lib / "pyspark.zip"), "/elsewhere"]
    assert wd.prefer_installed_pyspark(alone) == [] and alone[0] == str(lib / "pyspark.zip")


def test_this_venv_gives_spark_s_zips_back_to_the_installed_pyspark():
    """With the path Spark sets, the daemon imports pyspark and py4j from the venv (their byte code cached), where
    pyspark's daemon compiled them from the zip at every start; then it loads the worker and our task modules."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*spark_path(), str(ROOT)])}
    env.pop(wd.SQL_MARK, None)
    code = ("import json, sys\n"
            "from core.pipeline import worker_daemon as wd\n"
            "wd.prefer_installed_pyspark()\n"
            "done = wd.preload(wd.modules_for({'SPARK_SIMPLIFIED_TRACEBACK': '1'}))\n"
            "import pyspark, py4j\n"
            "print(json.dumps([pyspark.__file__, py4j.__file__, done, 'pyspark.worker' in sys.modules]))\n")
    before = subprocess.run([sys.executable, "-c", "import pyspark; print(pyspark.__file__)"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert ".zip" in before.stdout, before    # what pyspark's own daemon imports
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pyspark_file, py4j_file, done, worker = json.loads(r.stdout.splitlines()[-1])
    assert pyspark_file == str(INSTALLED / "__init__.py")
    assert py4j_file.startswith(SITE + os.sep) and ".zip" not in py4j_file
    assert tuple(done) == wd.TASK_MODULES + wd.SQL_MODULES and worker


def test_sql_daemons_also_load_pandas():
    assert wd.modules_for({}) == wd.TASK_MODULES
    assert "pandas" not in wd.TASK_MODULES
    assert wd.modules_for({wd.SQL_MARK: "1"}) == wd.TASK_MODULES + ("pandas", "pyspark.sql.worker.plan_data_source_read")


def test_a_module_that_does_not_import_is_left_to_the_worker():
    assert wd.preload(["json", "core.pipeline.no_such_module", "os.path"]) == ("json", "os.path")


def test_local_mode_runs_the_warm_daemon_and_a_cluster_pyspark_s_own():
    local = SparkSettings().conf()
    assert local["spark.python.daemon.module"] == WORKER_DAEMON == wd.__name__
    assert local["spark.python.worker.reuse"] == "true"
    # Executors get our code through addPyFile, after their daemon has started: it could not import ours.
    cluster = SparkSettings(master="spark://127.0.0.1:7077", driver_host="127.0.0.1").conf()
    assert "spark.python.daemon.module" not in cluster
    own = SparkSettings(extra={"spark.python.daemon.module": "pyspark.daemon"}).conf()
    assert own["spark.python.daemon.module"] == "pyspark.daemon"


def test_the_local_warm_up_runs_only_the_fused_plan():
    assert warm_up_plans("local[*]") == warm_up_plans("local[2]") == ("fused",)
    assert warm_up_plans("spark://10.0.0.5:7077") == PLANS == ("fused", "dataframe")
