"""The CLI's security options: an unsafe secret file is refused before any JVM starts (exit 2, one line); the
insecure-master warning; spark-master / spark-worker arguments."""
from __future__ import annotations

import os

import pytest

from core.cli import main, make_parser

CID = "0x" + "ab" * 33
BUILD = ["spark-build", "--db", "x.sqlite", "--community-id", CID, "--topic", "0x01020304", "--data-dir", "d",
         "--torrent-dir", "t"]
HYDRATE = ["spark-hydrate", "--folder", "d", "--community-id", CID, "--db", "m.sqlite", "--latest"]


@pytest.fixture
def open_secret(tmp_path):
    p = tmp_path / "spark.secret"
    p.write_text("0123456789abcdef0123\n")
    os.chmod(p, 0o644)
    return p


@pytest.mark.parametrize("cmd", [BUILD, HYDRATE])
def test_secret_readable_by_others_is_refused_before_spark_starts(tmp_path, capsys, open_secret, cmd,
                                                                  monkeypatch):
    from pyspark import SparkContext
    monkeypatch.chdir(tmp_path)
    gateway = SparkContext._gateway           # None unless an earlier test of this process started Spark
    rc = main([*cmd, "--master", "spark://10.0.0.5:7077", "--spark-secret-file", str(open_secret)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err == (f"archivist {cmd[0]}: Spark secret file {open_secret} is readable or writable by others "
                   f"(mode 0644): run chmod 600 {open_secret}\n")
    # No JVM was started: a launch for this master (another SPARK_LOCAL_IP than any earlier session's) would have
    # replaced the gateway, or been refused while an earlier session runs (exit 1, not 2).
    assert SparkContext._gateway is gateway
    assert not (tmp_path / "d").exists()


def test_encrypt_without_secret_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*BUILD, "--master", "spark://10.0.0.5:7077", "--spark-encrypt"]) == 2
    assert capsys.readouterr().err == ("archivist spark-build: Spark network encryption needs the cluster's shared "
                                       "secret: give --spark-secret-file (or [spark] secret_file)\n")


@pytest.mark.parametrize("cmd", [["spark-master", "--host", "127.0.0.1"],
                                 ["spark-worker", "--master", "spark://127.0.0.1:7077"]])
def test_daemons_refuse_an_open_secret(tmp_path, capsys, open_secret, cmd):
    rc = main([*cmd, "--work-dir", str(tmp_path / "w"), "--spark-secret-file", str(open_secret)])
    assert rc == 2
    assert capsys.readouterr().err.startswith(f"archivist {cmd[0]}: Spark secret file {open_secret} is readable")


def test_worker_needs_a_master_url(tmp_path, capsys):
    assert main(["spark-worker", "--master", "10.0.0.5:7077", "--work-dir", str(tmp_path / "w")]) == 2
    assert capsys.readouterr().err == "archivist spark-worker: not a standalone master URL: 10.0.0.5:7077\n"


def test_security_and_daemon_arguments():
    a = make_parser().parse_args(BUILD)
    assert (a.spark_secret_file, a.spark_encrypt) == (None, False)
    a = make_parser().parse_args([*HYDRATE, "--spark-secret-file", "s", "--spark-encrypt"])
    assert (a.spark_secret_file, a.spark_encrypt) == ("s", True)
    a = make_parser().parse_args(["spark-master"])
    assert (a.host, a.port, a.webui_port, a.spark_secret_file, a.spark_encrypt) == ("127.0.0.1", 7077, 8080,
                                                                                    None, False)
    a = make_parser().parse_args(["spark-worker", "--master", "spark://m:7077", "--cores", "3", "--memory", "4g",
                                  "--spark-secret-file", "s", "--spark-encrypt"])
    assert (a.master, a.host, a.port, a.cores, a.memory, a.spark_secret_file, a.spark_encrypt) == (
        "spark://m:7077", None, 0, 3, "4g", "s", True)
