"""What a JVM launch keeps for life (core/pipeline/jvm.py), without a JVM."""
from __future__ import annotations

import subprocess

from core.pipeline.jvm import UNKNOWN, differences, launch_environment
from core.pipeline.session import SparkSettings, prepare_environment


def test_launch_environment_is_the_env_and_the_jvm_only_settings(monkeypatch):
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.7")
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    got = launch_environment({"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "4"})
    assert got["$SPARK_LOCAL_IP"] == "10.0.0.7" and got["$SPARK_CONF_DIR"] is None
    assert got["spark.driver.memory"] == "2g"
    assert "spark.sql.shuffle.partitions" not in got   # a new SparkContext applies it: no new JVM needed


def test_differences_name_each_setting():
    old = {"$SPARK_LOCAL_IP": "127.0.0.1", "spark.driver.memory": "2g", "$PATH": "/bin"}
    new = {"$SPARK_LOCAL_IP": "10.0.0.7", "spark.driver.memory": "2g", "$PATH": "/bin"}
    assert differences(old, new) == ["$SPARK_LOCAL_IP: '127.0.0.1' -> '10.0.0.7'"]
    assert differences(old, old) == []
    assert differences(None, new) == [UNKNOWN]


def test_local_mode_after_a_cluster_session_is_back_on_loopback(monkeypatch):
    import core.pipeline.session as session
    monkeypatch.setattr(session, "_USER_LOCAL_IP", None)
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.1.2.77")   # what a cluster session of this process set
    prepare_environment(SparkSettings())
    assert launch_environment({})["$SPARK_LOCAL_IP"] == "127.0.0.1"
    monkeypatch.setattr(session, "_USER_LOCAL_IP", "10.9.9.9")   # the user's own setting wins
    prepare_environment(SparkSettings())
    assert launch_environment({})["$SPARK_LOCAL_IP"] == "10.9.9.9"


def test_the_jvm_is_spawned_in_its_own_session_without_a_preexec_fn():
    """pyspark's launch passes preexec_fn (SIGINT ignored), which forces a fork() of the whole process under the
    GIL; inside spawn_without_fork the same Popen call gets start_new_session instead (no terminal's Ctrl+C
    reaches a process outside the foreground group) and the function is never run."""
    from pyspark import java_gateway
    from core.pipeline.jvm import spawn_without_fork
    real = java_gateway.Popen
    ran = []
    with spawn_without_fork():
        p = java_gateway.Popen(["sh", "-c", "ps -o sid= -p $$"], preexec_fn=lambda: ran.append(1),
                               stdout=subprocess.PIPE, text=True)
        out, _ = p.communicate(timeout=30)
    assert java_gateway.Popen is real and ran == []
    assert int(out) == p.pid                      # the child leads its own session
