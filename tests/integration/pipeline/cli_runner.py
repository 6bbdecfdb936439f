"""Several `archivist` commands run one after the other in ONE process (one driver JVM instead of one per command).

`python -m tests.integration.pipeline.cli_runner` reads one JSON object per line on stdin ({"argv": [...],
"cwd": "..."}), runs `core.cli.main(argv)` (the same function the `archivist` entry point runs) with its
stdout and stderr captured, and answers each with one line on stdout: ANSWER + {"rc", "out", "err"}. Answers
are written through a descriptor of their own (fd 1 is pointed at stderr first), so the JVM cannot print into
them.

Each Spark command makes its own SparkOwner and closes it, as in its own process; pyspark keeps the JVM and
core/pipeline/jvm.py reuses it while the launch settings stay the same (docs/PIPELINE.md "Session"). A command's
SparkContext, application and executors are still its own. A Python exception that escapes main() is answered as
rc 99 with its traceback in "err" (a test that forbids tracebacks sees it).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import select
import signal
import subprocess
import sys
import traceback
from pathlib import Path

ANSWER = "@@archivist-cli "
ROOT = str(Path(__file__).resolve().parents[3])

# Environment for the Spark daemons these tests start (master, worker, and through the worker every executor):
# the client JIT and the serial collector, as the driver has them (session.DRIVER_JVM_OPTIONS). JAVA_TOOL_OPTIONS
# reaches every JVM of a daemon (spark-class's launcher too); a short-lived one then needs ~40 % less CPU (a
# master's start and stop: 4.5 -> 2.7 s of CPU, 2026-11-27). Only speed: what the JVMs do is the same. The
# drivers keep the product's own settings.
DAEMON_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Once the run's class-data archive is whole (core/pipeline/cds.py, made by tests/conftest.py), the daemons and
# executors map it too: their class path is the driver's (conf:jars/*; an executor's puts one of those jars first
# as well), so the JVM takes ~4,700-5,400 of their classes from it (-Xlog:class+load) and a master's or worker's
# start needs about half the CPU (master 2.4-3.1 -> 1.4-1.5 s, worker 2.9-3.6 -> 1.9-2.1 s, 2026-11-27). spark-class's
# launcher JVM (class path jars/* alone) refuses it, and its "Unable to use shared archive" warning would land in
# the stdout that spark-class reads as the command: `-Xlog:all=warning:stderr` sends JVM warnings to stderr (the
# daemon's log) instead. A worker that sees the venv at another path (the hidden worker of conftest.py) refuses it
# the same way and starts as without it.
ARCHIVE_OPTIONS = "-Xshare:auto -Xlog:disable -Xlog:all=warning:stderr"


def daemon_env() -> dict[str, str]:
    """The daemons' environment, read when a cluster starts: with the class-data archive once it is whole."""
    from core.pipeline import cds
    from core.pipeline.session import SparkSettings
    opts = DAEMON_JVM_OPTIONS
    path, _, why = cds.state(SparkSettings().conf())
    if path is not None and why is None and cds.splits_safely(path):
        opts += f" {cds.OPTION}{path} {ARCHIVE_OPTIONS}"
    return {"JAVA_TOOL_OPTIONS": opts}


def wait_unreaped(proc: subprocess.Popen, timeout: float | None) -> bool:
    """Wait until `proc` has exited WITHOUT reaping it (True), or `timeout` s (False). While it is an unreaped
    zombie its pid, and so its process group's id, cannot be given to another process: a killpg() then reaches
    only what is left of its own group (after a reap, the id may already be another test's new session)."""
    if proc.returncode is not None:
        return True
    fd = os.pidfd_open(proc.pid)
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()   # state, ppid, pgrp, ...
    except OSError:
        return None


def pidfds(match) -> list[int]:
    """pidfds of the processes for which `match(pid, stat fields)` holds now, each checked again once its pidfd is
    open (a pid reused in between by another process is dropped). Signal them later with kill_pidfds(): unlike a
    pid or a process group id, a pidfd never reaches another process."""
    fds = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or (st := _stat(int(d))) is None or not match(int(d), st):
            continue
        try:
            fd = os.pidfd_open(int(d))
        except ProcessLookupError:
            continue
        if (st := _stat(int(d))) is not None and match(int(d), st):
            fds.append(fd)
        else:
            os.close(fd)
    return fds


def group_pidfds(pgid: int) -> list[int]:
    """pidfds of the members of process group `pgid` (call it while the group's leader is not yet reaped)."""
    return pidfds(lambda pid, st: st[2] == str(pgid))


def kill_pidfds(fds: list[int]) -> int:
    """SIGKILL each process still alive (closes the fds); returns how many were."""
    killed = 0
    for fd in fds:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
        finally:
            os.close(fd)
    return killed


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL `proc`'s process group (it was started with start_new_session) and reap `proc`. Nothing is sent once
    `proc` was reaped (its group's id may belong to someone else by then)."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait(30)


def warm(master: str) -> None:
    """Launch the JVM now, as the first Spark command for `master` would (same environment and command line; no
    SparkContext): its start can overlap the test's own set-up, e.g. the cluster's."""
    from core.pipeline.jvm import ensure_jvm
    from core.pipeline.session import SparkSettings, prepare_environment
    settings = SparkSettings(master=master)
    prepare_environment(settings)
    ensure_jvm(settings.conf())


def serve(lines, answer) -> None:
    from core.cli import main
    for line in lines:
        req = json.loads(line)
        if "warm" in req:
            warm(req["warm"])
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            os.chdir(req.get("cwd") or ROOT)
            try:
                rc = main(req["argv"])
            except SystemExit as e:   # argparse
                rc = e.code if isinstance(e.code, int) else 2
            except BaseException:  # noqa: BLE001 - reported to the test
                traceback.print_exc()
                rc = 99
        answer(ANSWER + json.dumps({"rc": rc, "out": out.getvalue(), "err": err.getvalue()}))


class CliSession:
    """The runner as a child process (`prefix`: e.g. `ip netns exec NS`); `run(*argv)` -> (rc, stdout, stderr).
    `close()` ends it (EOF) and waits; kill() is the caller's last resort (its process group holds the JVM)."""

    def __init__(self, prefix: tuple = (), env: dict | None = None, log: Path | None = None):
        self.log = open(log, "w") if log is not None else subprocess.DEVNULL
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "tests.integration.pipeline.cli_runner"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     cwd=ROOT, env=env or {**os.environ, "PYTHONPATH": ROOT},
                                     start_new_session=True)

    def warm(self, master: str) -> None:
        """Have the runner launch its JVM for `master` (only its host matters: the driver's address) while the
        caller goes on; no answer."""
        self.proc.stdin.write(json.dumps({"warm": master}) + "\n")
        self.proc.stdin.flush()

    def run(self, *argv: str, cwd: Path | str | None = None) -> tuple[int, str, str]:
        self.send(*argv, cwd=cwd)
        return self.answer()

    def send(self, *argv: str, cwd: Path | str | None = None) -> None:
        """Start a command and return at once (`answer()` waits for it): two sessions can run at the same time."""
        self.proc.stdin.write(json.dumps({"argv": list(argv), "cwd": str(cwd) if cwd else None}) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> tuple[int, str, str]:
        while True:
            line = self.proc.stdout.readline()   # bounded by the test's timeout (pytest-timeout)
            if not line:
                wait_unreaped(self.proc, 30)   # not reaped: kill() still reaches its JVM's group
                st = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                raise AssertionError(f"the CLI runner exited ({st.si_status if st else 'still running'}) "
                                     "before it answered")
            if line.startswith(ANSWER):
                a = json.loads(line[len(ANSWER):])
                return a["rc"], a["out"], a["err"]

    def close(self, timeout: float = 120) -> int:
        """EOF, wait for the runner's exit (raises TimeoutExpired after `timeout`), then kill() what is left."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        exited = wait_unreaped(self.proc, timeout)
        self.kill()
        if not exited:
            raise subprocess.TimeoutExpired(self.proc.args, timeout)
        return self.proc.returncode

    def kill(self) -> None:
        kill_group(self.proc)   # what is left of it, its JVM included
        if self.log is not subprocess.DEVNULL and not self.log.closed:
            self.log.close()


if __name__ == "__main__":
    # Answers get their own copy of stdout (not inherited: os.dup); fd 1 becomes stderr, so that nothing the JVM
    # (started later, with fds 1 and 2) prints can get into an answer.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def answer(line: str) -> None:
        answers.write(line + "\n")
        answers.flush()
    serve(sys.stdin, answer)
