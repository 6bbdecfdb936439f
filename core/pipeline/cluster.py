"""A standalone Spark cluster (one master, 0 or 1 worker) on 127.0.0.1, started from the installed pyspark.

For tests and for trying cluster mode on one machine: `with StandaloneCluster(workdir) as c: c.master_url`.
Ports are chosen by Spark (port 0) and read back from the daemons' logs. The input store and archive folders must
sit where the executors can read them (here: the same file system).
The worker gets a clean environment, like a separate machine: no PYTHONPATH into the checkout (the driver ships
the code as a zip), and `python3` on its PATH is `python` (default: this interpreter, as if its venv were active).
Also runnable: `python -m core.pipeline.cluster WORKDIR [--no-worker]` prints the master URL, runs until Ctrl-C.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pyspark

_MASTER_RE = re.compile(r"Starting Spark master at (spark://[\w.\-]+:\d+)")
_REGISTERED_RE = re.compile(r"Successfully registered with master")


def spark_home() -> Path:
    return Path(pyspark.__file__).resolve().parent


class _Daemon:
    """A spark-class process whose log lines are scanned for a pattern (an Event, no polling)."""

    def __init__(self, args: list[str], log_path: Path, pattern: re.Pattern, env: dict):
        self.pattern = pattern
        self.match: re.Match | None = None
        self.ready = threading.Event()
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            if self.match is None:
                m = self.pattern.search(line)
                if m:
                    self.match = m
                    self.ready.set()
        self.ready.set()  # process ended: wake the waiter (match stays None)

    def wait(self, timeout: float, what: str) -> re.Match:
        if not self.ready.wait(timeout) or self.match is None:
            raise RuntimeError(f"{what} did not start within {timeout:.0f} s (see {self.log.name})")
        return self.match

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)
        self.log.close()


class StandaloneCluster:
    def __init__(self, workdir: Path | str, *, cores: int = 2, memory: str = "1g", timeout: float = 180.0,
                 worker: bool = True, host: str = "127.0.0.1", python: str = sys.executable):
        self.workdir = Path(workdir)
        self.cores, self.memory, self.timeout = cores, memory, timeout
        self.with_worker, self.host, self.python = worker, host, python
        self.master: _Daemon | None = None
        self.worker: _Daemon | None = None
        self.master_url: str | None = None

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP")}
        path = env.get("PATH", "")
        env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": self.host,
                    "SPARK_LOG_DIR": str(self.workdir / "logs"), "SPARK_WORKER_DIR": str(self.workdir / "work"),
                    "SPARK_NO_DAEMONIZE": "1",
                    "PATH": str(Path(self.python).parent) + (os.pathsep + path if path else "")})
        return env

    def start(self) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.master = _Daemon(["org.apache.spark.deploy.master.Master", "--host", self.host, "--port", "0",
                               "--webui-port", "0"], self.workdir / "master.log", _MASTER_RE, self._env())
        self.master_url = self.master.wait(self.timeout, "Spark master").group(1)
        if self.with_worker:
            self.start_worker()
        return self.master_url

    def start_worker(self) -> None:
        self.worker = _Daemon(["org.apache.spark.deploy.worker.Worker", "--host", self.host, "--port", "0",
                               "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory,
                               "--work-dir", str(self.workdir / "work"), self.master_url],
                              self.workdir / "worker.log", _REGISTERED_RE, self._env())
        self.worker.wait(self.timeout, "Spark worker")

    def stop(self) -> None:
        for d in (self.worker, self.master):
            if d is not None:
                d.stop()

    def __enter__(self) -> "StandaloneCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-worker"]
    with StandaloneCluster(args[0] if args else "spark-cluster", worker="--no-worker" not in sys.argv) as c:
        print(c.master_url, flush=True)
        try:
            c.master.proc.wait()
        except KeyboardInterrupt:
            pass
