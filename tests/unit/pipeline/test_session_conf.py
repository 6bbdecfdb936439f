"""Spark session settings without a JVM: driver address, executor Python, shipped code, log config."""
from __future__ import annotations

import os
import sys
import zipfile

import pytest

from core.pipeline.cluster_conf import (SparkConfigError, driver_network, local_address_towards, master_host_port,
                                        no_worker_message, project_zip)
from core.pipeline.session import SparkSettings


def _no_route(host, port):
    raise AssertionError("must not look up a route")


def test_master_host_port():
    assert master_host_port("spark://10.0.0.5:7077") == ("10.0.0.5", 7077)
    assert master_host_port("spark://m1.example:7077,m2.example:7077") == ("m1.example", 7077)
    assert master_host_port("spark://[fe80::1]:7077") == ("fe80::1", 7077)
    for bad in ("local[*]", "spark://nohost", "spark://h:port"):
        with pytest.raises(SparkConfigError):
            master_host_port(bad)


def test_loopback_master_routes_to_loopback():
    assert local_address_towards("127.0.0.1", 7077) == "127.0.0.1"
    conf = driver_network("spark://127.0.0.1:7077")
    assert conf == {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}


def test_remote_master_advertises_the_routing_address():
    seen = []
    conf = driver_network("spark://10.1.2.3:7077", route=lambda h, p: seen.append((h, p)) or "10.1.2.77")
    assert seen == [("10.1.2.3", 7077)]
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "10.1.2.77"
    assert "spark.driver.port" not in conf and "spark.driver.blockManager.port" not in conf


def test_real_route_to_a_non_local_address_sends_nothing():
    # connect() on UDP only asks the routing table; TEST-NET-1 is never routed to anything real.
    try:
        addr = local_address_towards("192.0.2.1", 7077)
    except SparkConfigError:
        pytest.skip("no default route on this machine")
    assert addr and addr != "0.0.0.0"


def test_explicit_flags_win():
    conf = driver_network("spark://10.1.2.3:7077", host="203.0.113.9", bind="0.0.0.0", port=40000,
                          block_manager_port=40001, route=_no_route)
    assert conf == {"spark.driver.host": "203.0.113.9", "spark.driver.bindAddress": "0.0.0.0",
                    "spark.driver.port": "40000", "spark.driver.blockManager.port": "40001"}
    # bind defaults to the host, as in Spark
    assert driver_network("spark://10.1.2.3:7077", host="10.9.9.9", route=_no_route)[
        "spark.driver.bindAddress"] == "10.9.9.9"


def test_local_mode_stays_on_loopback():
    assert driver_network("local[*]", route=_no_route) == {"spark.driver.host": "127.0.0.1",
                                                            "spark.driver.bindAddress": "127.0.0.1"}
    assert driver_network("local[2]", port=41000, route=_no_route)["spark.driver.port"] == "41000"


def test_unresolvable_master_is_a_clear_error():
    with pytest.raises(SparkConfigError, match="--driver-host"):
        local_address_towards("no-such-host.invalid", 7077)


def test_local_conf_keeps_this_interpreter_and_the_checkout(tmp_path):
    s = SparkSettings(log_dir=str(tmp_path))
    conf = s.conf()
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.pyspark.python"] == conf["spark.executorEnv.PYSPARK_PYTHON"] == sys.executable
    assert conf["spark.executorEnv.PYTHONPATH"]
    assert s.py_files() == []


def test_cluster_conf_hands_nothing_driver_local_to_executors(tmp_path):
    s = SparkSettings(master="spark://10.1.2.3:7077", log_dir=str(tmp_path), driver_host="10.1.2.77",
                      pyfiles_cache=str(tmp_path / "cache"))
    conf = s.conf()
    assert conf["spark.driver.host"] == "10.1.2.77"
    assert conf["spark.pyspark.python"] == conf["spark.executorEnv.PYSPARK_PYTHON"] == "python3"
    assert conf["spark.pyspark.driver.python"] == sys.executable
    assert "spark.executorEnv.PYTHONPATH" not in conf
    executor_values = {k: v for k, v in conf.items()
                       if k.startswith(("spark.executor", "spark.pyspark.python", "spark.submit.pyFiles"))}
    driver_paths = [str(tmp_path), sys.executable, os.path.dirname(os.path.dirname(__file__))]
    for k, v in executor_values.items():
        assert not any(p in v for p in driver_paths), (k, v)
    assert conf["spark.executor.extraJavaOptions"] == "-XX:MaxDirectMemorySize=1g"
    # the log4j file stays the driver's
    assert f"file:{tmp_path / 'log4j2.properties'}" in conf["spark.driver.extraJavaOptions"]
    assert "rootLogger.level = error" in (tmp_path / "log4j2.properties").read_text()
    assert SparkSettings(master="spark://h:1", driver_host="x", executor_python="/opt/py/bin/python3",
                         log_dir=str(tmp_path)).conf()["spark.pyspark.python"] == "/opt/py/bin/python3"


def test_project_zip_is_cached_deterministic_and_complete(tmp_path):
    root = tmp_path / "proj"
    (root / "core" / "sub" / "__pycache__").mkdir(parents=True)
    (root / "core" / "__init__.py").write_text("")
    (root / "core" / "sub" / "__init__.py").write_text("")
    (root / "core" / "sub" / "m.py").write_text("X = 1\n")
    (root / "core" / "sub" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"junk")
    (root / "core" / "notes.txt").write_text("not code")
    (root / "core" / "sub" / "words_a.txt").write_text("package data")
    (root / "pyproject.toml").write_text('[tool.setuptools.package-data]\n"core.sub" = ["words_*.txt"]\n'
                                         'gui = ["*.qss"]\n')
    z1 = project_zip(tmp_path / "cache", root=root)
    assert z1.parent == tmp_path / "cache" and z1.name.startswith("archivist-core-")
    with zipfile.ZipFile(z1) as z:
        assert sorted(z.namelist()) == ["core/__init__.py", "core/sub/__init__.py", "core/sub/m.py",
                                        "core/sub/words_a.txt"]
    before = z1.read_bytes()
    mtime = z1.stat().st_mtime_ns
    assert project_zip(tmp_path / "cache", root=root) == z1 and z1.stat().st_mtime_ns == mtime  # reused
    z1.unlink()
    assert project_zip(tmp_path / "cache", root=root).read_bytes() == before                  # same bytes
    (root / "core" / "sub" / "m.py").write_text("X = 2\n")
    z2 = project_zip(tmp_path / "cache", root=root)
    assert z2 != z1 and not list((tmp_path / "cache").glob(".*tmp"))


def test_real_project_zip_imports(tmp_path):
    z = project_zip(tmp_path)
    with zipfile.ZipFile(z) as f:
        names = set(f.namelist())
    assert {"core/__init__.py", "core/pipeline/encode.py", "core/pipeline/source.py"} <= names
    assert {"core/status/alias_adjectives.txt", "core/status/alias_animals.txt"} <= names   # export's author names
    import subprocess
    code = ("import core.pipeline.encode as m; from core.status.alias import three_word_name as n; print(m.__file__); "
            "print(n('04eedbaafd6adf4a9233a13e7b1c3c14461fffeba2e9054b8d456ce5f6ebeafadcbf3dce3716253fbc391277fa5a"
            "086b60b283daf61fb5b1f26895f456c2f31ae3'))")
    out = subprocess.run([sys.executable, "-c", code],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(z)}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert str(z) in out.stdout and out.stdout.splitlines()[1] == "Darkorange Blue Bubblefish"


def test_no_worker_message_is_one_line():
    msg = no_worker_message("spark://10.0.0.5:7077")
    assert msg == "no Spark worker is available at spark://10.0.0.5:7077: start a worker or use --master local[*]"


def test_cli_cluster_flags():
    from core.cli import make_parser
    cid = "0x" + "ab" * 33
    for cmd in (["spark-build", "--db", "x", "--community-id", cid, "--topic", "0x01020304", "--data-dir", "d",
                 "--torrent-dir", "t"],
                ["spark-hydrate", "--folder", "d", "--community-id", cid, "--db", "m", "--latest", "--key", "aa"],
                ["export", "folder", "--out", "o", "--format", "jsonl"]):
        a = make_parser().parse_args(cmd)
        assert (a.master, a.driver_host, a.driver_bind, a.driver_port, a.block_manager_port, a.executor_python,
                a.executor_timeout) == ("local[*]", None, None, None, None, None, 120.0)
        a = make_parser().parse_args(cmd + ["--master", "spark://m:7077", "--driver-host", "203.0.113.9",
                                            "--driver-bind", "0.0.0.0", "--driver-port", "40000",
                                            "--block-manager-port", "40001", "--executor-python", "/usr/bin/python3",
                                            "--executor-timeout", "5"])
        assert (a.driver_host, a.driver_bind, a.driver_port, a.block_manager_port, a.executor_python,
                a.executor_timeout) == ("203.0.113.9", "0.0.0.0", 40000, 40001, "/usr/bin/python3", 5.0)
        assert make_parser().parse_args(cmd + ["--worker-timeout", "7"]).executor_timeout == 7.0   # the old name
