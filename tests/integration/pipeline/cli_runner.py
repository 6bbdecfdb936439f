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
import subprocess
import sys
import traceback
from pathlib import Path

ANSWER = "@@archivist-cli "
ROOT = str(Path(__file__).resolve().parents[3])


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
                raise AssertionError(f"the CLI runner exited ({self.proc.wait(30)}) before it answered")
            if line.startswith(ANSWER):
                a = json.loads(line[len(ANSWER):])
                return a["rc"], a["out"], a["err"]

    def close(self, timeout: float = 120) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        import signal
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)   # what is left of it, its JVM included
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(30)
        if self.log is not subprocess.DEVNULL:
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
