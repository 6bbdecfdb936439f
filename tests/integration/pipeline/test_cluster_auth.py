"""A cluster started with a shared secret (`archivist spark-master` / `spark-worker`, Spark's own daemons, with
authentication and network encryption) refuses a driver without the secret at once with one line, and runs the
build of a driver that has it, byte-identical to the reference. The secret never appears on a command line.
Four JVMs on 127.0.0.1 (master, worker, two drivers at the same time; each driver a cli_runner.py process whose
JVM starts with the daemons); all are stopped in `finally`."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.archive.build import build_archives
from core.synth import synthesize

from .cli_runner import CliSession, daemon_env, kill_pidfds, pidfds
from .helpers import folder_bytes

pytestmark = [pytest.mark.spark]
ROOT = str(Path(__file__).resolve().parents[3])
SECRET = "f3c1e0c0ffee" * 4
ENV = {**os.environ, "PYTHONPATH": ROOT}


def _cli(*args, **kw) -> subprocess.Popen:
    """`archivist spark-master` / `spark-worker` (their JVMs with the tests' daemon_env())."""
    return subprocess.Popen([sys.executable, "-m", "core.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**ENV, **daemon_env()}, **kw)


def _first_line(proc: subprocess.Popen, what: str) -> str:
    line = proc.stdout.readline()   # bounded: the daemon gives up after --start-timeout
    if not line:
        proc.wait(10)
        raise AssertionError(f"{what} exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
    return line.strip()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _cmdlines() -> dict[int, bytes]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = (d / "cmdline").read_bytes()
            except OSError:
                pass
    return out


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_authenticated_cluster_refuses_a_driver_without_the_secret(tmp_path):
    secret = tmp_path / "spark.secret"
    secret.write_text(SECRET + "\n")
    os.chmod(secret, 0o600)
    seen_on_a_command_line = []
    done = threading.Event()

    def sample():   # the secret must never be on any process's command line (ps shows those to everyone)
        while not done.is_set():
            seen_on_a_command_line.extend(p for p, c in _cmdlines().items() if SECRET.encode() in c)
            done.wait(0.2)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    auth = ["--spark-secret-file", str(secret), "--spark-encrypt"]
    master = worker = None
    # the two drivers (cli_runner.py), their JVMs launched while the daemons start; the secret reaches a driver's
    # JVM through py4j when its command runs, never at launch
    drivers = [CliSession(env=ENV, log=tmp_path / f"{name}.log") for name in ("anon", "driver")]
    try:
        for d in drivers:
            d.warm("spark://127.0.0.1:7077")
        master = _cli("spark-master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                      "--work-dir", str(tmp_path / "master"), "--start-timeout", "60", *auth)
        r = synthesize(tmp_path / "db.sqlite", messages=400, weeks=2, seed=11)
        ref = build_archives(tmp_path / "db.sqlite", r.community_id, [bytes.fromhex(t[2:]) for t in r.topics],
                             tmp_path / "ref", tmp_path / "ref-t", end=r.end)
        url = _first_line(master, "spark-master")
        assert url.startswith("spark://127.0.0.1:"), url
        worker = _cli("spark-worker", "--master", url, "--cores", "2", "--memory", "1g",
                      "--work-dir", str(tmp_path / "worker"), "--start-timeout", "60", *auth)
        assert _first_line(worker, "spark-worker") == f"registered with {url}"

        def build(session: CliSession, out: str, *extra) -> None:
            topics = [x for t in r.topics for x in ("--topic", t)]
            session.send("spark-build", "--master", url, "--db", str(tmp_path / "db.sqlite"), "--community-id",
                         r.community_id, *topics, "--data-dir", str(tmp_path / out), "--torrent-dir",
                         str(tmp_path / f"{out}-t"), "--end", str(r.end), "--json", "--worker-timeout", "60",
                         *extra, cwd=tmp_path)
        build(drivers[0], "anon")                  # both at the same time
        build(drivers[1], "spark", *auth)
        anon_rc, anon_out, anon_err = drivers[0].answer()
        rc, out, err = drivers[1].answer()
        assert [d.close() for d in drivers] == [0, 0]
        done.set()
        sampler.join(5)

        assert anon_rc == 1, anon_err[-3000:]
        assert anon_err.strip().splitlines()[-1] == (
            f"archivist spark-build: the Spark master at {url} requires authentication: give its shared secret "
            "with --spark-secret-file (or [spark] secret_file)"), anon_err[-3000:]
        assert "Traceback" not in anon_err and anon_out == ""
        assert not (tmp_path / "anon-t").exists() or not list((tmp_path / "anon-t").iterdir())
        # Refused at once by the probe (that line is its own; Spark alone would retry for 60 s, then the watchdog
        # would say "no Spark worker"): the master saw it fail authentication and never registered its application.
        master_log = (tmp_path / "master" / "master.log").read_text()
        assert "Expected SaslMessage" in master_log, master_log[-3000:]

        assert rc == 0, err[-3000:]
        assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
        assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")
        assert f'"{ref.infohash}"' in out
        assert seen_on_a_command_line == []
        # the daemons got the secret from a properties file that is gone once they were up; logs are private
        assert not list(tmp_path.glob("*/conf/*.properties"))
        for log in (tmp_path / "master" / "master.log", tmp_path / "worker" / "worker.log"):
            assert (log.stat().st_mode & 0o077) == 0, log
        assert "authentication enabled" in master_log
        assert master_log.count("Registered app archivist with ID") == 1, master_log[-3000:]   # the secret driver's
        daemons = [p for p, c in _cmdlines().items() if str(tmp_path).encode() in c and b"java" in c]
        assert daemons
    finally:
        done.set()
        for d in drivers:
            d.kill()
        _stop(worker)
        _stop(master)
    assert master.returncode == 0 and worker.returncode == 0      # Ctrl-C: a clean stop
    assert not [p for p in daemons if p in _cmdlines()]            # the JVMs are gone too
    # the command names its log file (it printed a file descriptor's number before)
    assert (f"archivist spark-master: running (log: {tmp_path / 'master' / 'master.log'}); Ctrl+C stops it"
            in master.stderr.read())
