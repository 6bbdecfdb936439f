"""A Spark cluster and its driver on two different hosts: two Linux network namespaces joined by a veth pair.

Namespace A (10.231.0.1) runs `archivist spark-master` and `spark-worker`; namespace B (10.231.0.2) runs the
drivers (`archivist spark-build`, `spark-hydrate`) against spark://10.231.0.1:PORT, so the driver has to find and
advertise 10.231.0.2 itself, and the executors in A reach it over the veth link only (127.0.0.1 is a different
loopback in each namespace). Namespaces separate the network, not the file system: both see the same files, which
is the shared-file-system set-up that cluster mode requires today (store, output folders, member DB at the same
path everywhere; docs/PIPELINE.md "Cluster").

Checks: the build's output folder is byte-identical to the single-process `archivist build` of the same store;
`spark-hydrate` of it gives the same rows as the single-process `archivist import`; with every worker killed the
next job exits 1 with the watchdog's one line (after `--executor-timeout`) as an application that got no executor.
The three driver commands run in one process in B (cli_runner.py: one driver JVM, launched while the cluster
starts). Needs root and `ip netns` (else skipped,
with the reason). Every process left in the namespaces is killed and both namespaces are deleted, also on failure.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.synth import synthesize

from .cli_runner import CliSession, daemon_env
from .helpers import folder_bytes, history_tables

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]
ROOT = str(Path(__file__).resolve().parents[3])
ENV = {**os.environ, "PYTHONPATH": ROOT}
A_IP, B_IP = "10.231.0.1", "10.231.0.2"
EXECUTOR_TIMEOUT = 2   # seconds; the failing build's --executor-timeout (configuration, not a bound)


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=60)


def _ip_ok(*args: str) -> str:
    r = _ip(*args)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _namespaces() -> set[str]:
    return {line.split()[0] for line in _ip_ok("netns", "list").splitlines() if line.strip()}


def _netns_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create network namespaces (ip netns add)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    r = _ip("netns", "list")
    if r.returncode != 0:
        return f"`ip netns` is unavailable: {r.stderr.strip()}"
    return None


def _pids_in(ns: str) -> list[int]:
    r = _ip("netns", "pids", ns)
    return [int(p) for p in r.stdout.split()] if r.returncode == 0 else []


def _in_namespace(pid: int, ns: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{ns}").st_ino
    except OSError:
        return False


def _kill_everything_in(ns: str, deadline_s: float = 60.0) -> list[int]:
    """SIGKILL every process still in `ns` (all of them were started by this test) until none is left. Each is
    signalled through a pidfd opened after `ip netns pids` listed it and checked to be in `ns` once open: a pid that
    ended in between and was reused by another test's process is not touched."""
    killed: list[int] = []
    deadline = time.monotonic() + deadline_s
    while pids := _pids_in(ns):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes still in namespace {ns}: {pids}")
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                if not _in_namespace(pid, ns):
                    continue
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                killed.append(pid)
                # wait for this process to be gone (its pidfd turns readable), not a fixed interval
                select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            except ProcessLookupError:
                pass
            finally:
                os.close(fd)
    return killed


@pytest.fixture
def two_namespaces():
    """(A, B): two fresh namespaces, A = 10.231.0.1/24 and B = 10.231.0.2/24 on one veth pair, loopback up in
    both. Teardown kills what runs in them, deletes them (the veth pair goes with them) and checks they are gone."""
    reason = _netns_unavailable()
    if reason:
        print(f"\nSKIPPED test_netns_cluster: {reason}")
        pytest.skip(reason)
    tag = secrets.token_hex(3)
    a, b = f"archivist-a-{tag}", f"archivist-b-{tag}"
    va, vb = f"arva{tag}", f"arvb{tag}"          # interface names: at most 15 characters
    created: list[str] = []
    leftovers: list[int] = []
    try:
        for ns in (a, b):
            r = _ip("netns", "add", ns)
            if r.returncode != 0:
                print(f"\nSKIPPED test_netns_cluster: ip netns add: {r.stderr.strip()}")
                pytest.skip(f"cannot create a network namespace: {r.stderr.strip()}")
            created.append(ns)
        _ip_ok("link", "add", va, "type", "veth", "peer", "name", vb)
        _ip_ok("link", "set", va, "netns", a)
        _ip_ok("link", "set", vb, "netns", b)
        for ns, dev, addr in ((a, va, A_IP), (b, vb, B_IP)):
            _ip_ok("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip_ok("-n", ns, "link", "set", dev, "up")
            _ip_ok("-n", ns, "link", "set", "lo", "up")
        yield a, b
    finally:
        for ns in created:
            leftovers += _kill_everything_in(ns)
        for ns in created:
            _ip("netns", "del", ns)
        subprocess.run(["ip", "link", "del", va], capture_output=True, timeout=30)   # only if never moved
    assert not {a, b} & _namespaces(), _namespaces()
    assert leftovers == [], f"processes were still running in the namespaces: {leftovers}"


def _cli(*args: str, ns: str | None = None, env: dict = ENV, **kw) -> subprocess.Popen:
    prefix = ["ip", "netns", "exec", ns] if ns else []   # ip netns exec execs the command: same pid
    return subprocess.Popen([*prefix, sys.executable, "-m", "core.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def _run(*args: str, ns: str | None = None, timeout: float = 600, **kw) -> tuple[int, str, str]:
    p = _cli(*args, ns=ns, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate(timeout=30)
        raise AssertionError(f"{args[0]} did not finish in {timeout} s: {err[-3000:]}") from None
    return p.returncode, out, err


def _first_line(proc: subprocess.Popen, what: str) -> str:
    line = proc.stdout.readline()   # bounded: the daemon gives up after --start-timeout
    if not line:
        proc.wait(30)
        raise AssertionError(f"{what} exited {proc.returncode}: {proc.stderr.read()[-3000:]}")
    return line.strip()


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_driver_and_cluster_in_two_network_namespaces(two_namespaces, tmp_path):
    ns_a, ns_b = two_namespaces
    r = synthesize(tmp_path / "db.sqlite", messages=1000, weeks=3, seed=16)
    topics = [x for t in r.topics for x in ("--topic", t)]

    def build_args(cmd: str, out: str) -> list[str]:
        return [cmd, "--db", str(tmp_path / "db.sqlite"), "--community-id", r.community_id, *topics,
                "--data-dir", str(tmp_path / out), "--torrent-dir", str(tmp_path / f"{out}-t"),
                "--end", str(r.end), "--json"]

    master = worker = None
    # B's drivers: the three Spark commands in one process (cli_runner.py), its JVM launched while A's daemons start
    drivers = CliSession(prefix=("ip", "netns", "exec", ns_b), env=ENV, log=tmp_path / "drivers.log")
    try:
        master = _cli("spark-master", "--host", A_IP, "--port", "0", "--webui-port", "0",
                      "--work-dir", str(tmp_path / "master"), "--start-timeout", "180", ns=ns_a,
                      env={**ENV, **daemon_env()})
        drivers.warm(f"spark://{A_IP}:7077")
        # the single-process reference, in this (the root) namespace, while the cluster starts
        rc, ref_out, err = _run(*build_args("build", "ref"))
        assert rc == 0, err[-3000:]
        ref = json.loads(ref_out)
        rc, _, err = _run("import", str(tmp_path / "ref" / r.community_id), "--history",
                          str(tmp_path / "ref.sqlite"), "--community-id", r.community_id, "--all", "--json")
        assert rc == 0, err[-3000:]

        url = _first_line(master, "spark-master")
        assert url.startswith(f"spark://{A_IP}:"), url
        # no --host: the worker picks the address that routes to the master, A's own
        worker = _cli("spark-worker", "--master", url, "--cores", "2", "--memory", "1g",
                      "--work-dir", str(tmp_path / "worker"), "--start-timeout", "180", ns=ns_a,
                      env={**ENV, **daemon_env()})
        assert _first_line(worker, "spark-worker") == f"registered with {url}"

        # 1. build: driver in B, executors in A; bytes equal the reference
        rc, out, err = drivers.run(*build_args("spark-build", "spark"), "--master", url, "--executor-timeout",
                                   "180", cwd=tmp_path)
        assert rc == 0, err[-3000:]
        res = json.loads(out)
        assert res["infohash"] == ref["infohash"] and res["new_archive_ids"] == ref["new_archive_ids"]
        assert len(res["new_archive_ids"]) >= 3
        assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
        assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")
        # The executors ran on the worker in A and connected back to the driver at B's address.
        launches = list((tmp_path / "worker" / "work").glob("app-*/*/stderr"))
        assert launches
        launch = "\n".join(p.read_text(errors="replace") for p in launches)
        assert f"CoarseGrainedScheduler@{B_IP}:" in launch, launch[-3000:]
        assert "CoarseGrainedScheduler@127.0.0.1" not in launch
        # their scratch went into the worker's work folder, not /tmp (which the SIGKILL below would have left a folder in)
        scratch = list((tmp_path / "worker" / "local").glob("spark-*"))
        assert len(scratch) == 1 and scratch[0].is_dir(), scratch

        # 2. hydrate the Spark-built folder, driver in B: the same rows as the single-process import
        rc, out, err = drivers.run("spark-hydrate", "--folder", str(tmp_path / "spark" / r.community_id),
                                   "--community-id", r.community_id, "--db", str(tmp_path / "spark.sqlite"), "--all",
                                   "--master", url, "--executor-timeout", "180", "--json", cwd=tmp_path)
        assert rc == 0, err[-3000:]
        assert json.loads(out)["messages"] == r.messages
        spark_rows, ref_rows = history_tables(tmp_path / "spark.sqlite"), history_tables(tmp_path / "ref.sqlite")
        assert len(spark_rows[0]) == r.messages
        assert spark_rows == ref_rows

        # 3. kill every worker (SIGKILL: the machine is gone); the next job fails with the one line (the
        # watchdog's; its timing rule: tests/unit/pipeline/test_executor_watch.py)
        worker_jvms = [p for p in _pids_in(ns_a) if b"org.apache.spark.deploy.worker.Worker" in _cmdline(p)]
        assert len(worker_jvms) == 1, worker_jvms
        os.kill(worker_jvms[0], signal.SIGKILL)
        worker.wait(60)      # the CLI notices its daemon died and exits
        assert not [p for p in _pids_in(ns_a) if b"deploy.worker.Worker" in _cmdline(p)]
        rc, out, err = drivers.run(*build_args("spark-build", "after"), "--master", url,
                                   "--executor-timeout", str(EXECUTOR_TIMEOUT), cwd=tmp_path)
        assert rc == 1, err[-3000:]
        assert err.strip().splitlines()[-1] == (f"archivist spark-build: no Spark worker is available at {url}: "
                                                "start a worker or use --master local[*]"), err[-3000:]
        assert "Traceback" not in err and out == ""
        assert not (tmp_path / "after-t").exists() or not list((tmp_path / "after-t").iterdir())
        assert not list((tmp_path / "after").glob("*/index")) if (tmp_path / "after").exists() else True
        # it waited as an application (the third), to which no executor was ever given
        log = (tmp_path / "master" / "master.log").read_text()
        apps = re.findall(r"Registered app archivist with ID (app-\S+)", log)
        assert len(apps) == 3, log[-3000:]
        assert f"Launching executor {apps[2]}/" not in log, log[-3000:]
        assert drivers.close() == 0
    finally:
        drivers.kill()
        _stop(worker)
        _stop(master)
    assert master.returncode == 0                                # Ctrl-C: a clean stop
    assert not [p for p in _pids_in(ns_a) if b"java" in _cmdline(p)]   # its JVM went with it
