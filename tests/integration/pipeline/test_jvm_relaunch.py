"""pyspark keeps one JVM per process: a second session with another launch environment gets a fresh JVM (when no
SparkContext is active) or a one-line refusal naming what differs (while one is). Run in a child process: this
test process's own session (the spark_owner fixture) must not be disturbed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_CHILD = """
import json, os, sys
from core.pipeline.session import JobFailed, SparkOwner, SparkSettings

def probe(spark, job):
    jvm = spark.sparkContext._jvm
    return {"pid": int(jvm.java.lang.ProcessHandle.current().pid()),
            "max_heap": int(jvm.java.lang.Runtime.getRuntime().maxMemory()),
            "conf_dir": jvm.java.lang.System.getenv("SPARK_CONF_DIR"),
            "rows": spark.range(3).count()}

out = {}
first = SparkOwner(SparkSettings(driver_memory="512m"))
out["first"] = first.submit(probe).result(600)
os.environ["SPARK_CONF_DIR"] = conf_dir = sys.argv[1]   # an empty Spark conf folder: changes nothing else
second = SparkOwner(SparkSettings(driver_memory="1g"))
try:
    second.submit(probe).result(600)
    out["refused"] = None
except JobFailed as e:
    out["refused"] = str(e)
first.close()                          # its SparkContext stops; the JVM it ran on is still there
out["second"] = second.submit(probe).result(600)
out["first_jvm_alive"] = os.path.exists(f"/proc/{out['first']['pid']}")
out["conf_dir"] = conf_dir
second.close()
print("RESULT " + json.dumps(out))
"""


def test_a_second_session_with_other_launch_settings_gets_its_own_jvm(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "PYSPARK_GATEWAY_PORT")}
    (tmp_path / "spark-conf").mkdir()
    p = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "spark-conf")], cwd=ROOT, capture_output=True,
                       text=True, timeout=280, env={**env, "PYTHONPATH": ROOT})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(next(line for line in p.stdout.splitlines() if line.startswith("RESULT "))[7:])
    first, second = out["first"], out["second"]
    assert first["rows"] == second["rows"] == 3
    # While the first session runs, the second is refused in one line that names what differs.
    refused = out["refused"]
    assert refused is not None and "\n" not in refused
    assert "spark.driver.memory: '512m' -> '1g'" in refused and "$SPARK_CONF_DIR" in refused
    # Once the first has stopped, the second runs on a new JVM launched with its own settings.
    assert second["pid"] != first["pid"] and not out["first_jvm_alive"]
    assert first["conf_dir"] != out["conf_dir"] == second["conf_dir"]
    assert first["max_heap"] <= 512 << 20 < 768 << 20 < second["max_heap"] <= 1 << 30
