"""Spark's own standalone daemons (master, worker) started from the installed pyspark: no home-made scheduler.

`StandaloneCluster`: one master and 0 or 1 worker on one host (default 127.0.0.1), for tests and for trying cluster
mode on one machine. `archivist spark-master` / `archivist spark-worker` (core/pipeline/cli.py) run one daemon in
the foreground through `serve()`. With a secret file, both daemons get `spark.authenticate` (and, with `encrypt`,
`spark.network.crypto.enabled`) from a 0600 properties file in a private folder, removed once the daemon has read it.

For tests and for trying cluster mode on one machine: `with StandaloneCluster(workdir) as c: c.master_url`.
Ports are chosen by Spark (port 0) and read back from the daemons' logs. The executors read the job's stage
folder (`--stage-dir`), else the input store and downloaded archives, at the driver's paths (here: the same file
system, unless `worker_prefix` starts the worker in a mount namespace that hides some of it).
The worker gets a clean environment, like a separate machine: no PYTHONPATH into the checkout (the driver ships
the code as a zip), and `python3` on its PATH is `python` (default: this interpreter, as if its venv were active).
Also runnable: `python -m core.pipeline.cluster WORKDIR [--no-worker]` prints the master URL, runs until Ctrl-C.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyspark

from core.pipeline import security
from core.process import stop_process

_MASTER_RE = re.compile(r"Starting Spark master at (spark://[\w.\-]+:\d+)")
_REGISTERED_RE = re.compile(r"Successfully registered with master")
_FAILED_RE = re.compile(r"Failed to connect to master|All masters are unresponsive")
_RECORD_RE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ")   # the start of the next log record


class DaemonError(RuntimeError):
    """A Spark daemon did not come up; the message is one line."""


def spark_home() -> Path:
    return Path(pyspark.__file__).resolve().parent


class _Daemon:
    """A spark-class process whose log lines are scanned for a pattern (an Event, no polling)."""

    def __init__(self, args: list[str], log_path: Path, pattern: re.Pattern, env: dict, prefix: tuple = ()):
        self.pattern = pattern
        self.match: re.Match | None = None
        self.failure: list[str] | None = None   # a refused registration: the log record's lines
        self.ready = threading.Event()
        self.log_path = Path(log_path)
        self.log = os.fdopen(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w")
        self.proc = subprocess.Popen([*prefix, str(spark_home() / "bin" / "spark-class"), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            if self.ready.is_set():
                continue
            if self.failure is not None:   # collect the refusal's stack trace up to the next log record
                if _RECORD_RE.match(line) or len(self.failure) > 60:
                    self.ready.set()
                else:
                    self.failure.append(line.rstrip())
                continue
            m = self.pattern.search(line)
            if m:
                self.match = m
                self.ready.set()
            elif _FAILED_RE.search(line):
                self.failure = [line.rstrip()]
                # the stack trace follows at once; the next record may take a while (Spark retries in ~10 s)
                t = threading.Timer(2.0, self.ready.set)
                t.daemon = True
                t.start()
        self.ready.set()  # process ended: wake the waiter (match stays None)

    def wait(self, timeout: float, what: str, master_url: str | None = None, with_secret: bool = False) -> re.Match:
        if not self.ready.wait(timeout):
            raise DaemonError(f"{what} did not start within {timeout:.0f} s (see {self.log.name})")
        if self.match is None and self.failure is not None and master_url:
            raise DaemonError(f"{what}: " + security.refusal_message(master_url, self.failure,
                                                                      with_secret=with_secret)
                              + f" (see {self.log.name})")
        if self.match is None:
            raise DaemonError(f"{what} did not start (see {self.log.name})")
        return self.match

    def stop(self) -> None:
        stop_process(self.proc)
        self.reader.join(10)
        self.log.close()


class StandaloneCluster:
    def __init__(self, workdir: Path | str, *, cores: int | None = 2, memory: str | None = "1g",
                 timeout: float = 180.0, worker: bool = True, master: bool = True, host: str = "127.0.0.1",
                 port: int = 0, webui_port: int = 0, python: str = sys.executable, secret_file: str | None = None,
                 encrypt: bool = False, master_url: str | None = None, worker_prefix: tuple = (),
                 env: dict[str, str] | None = None):
        self.workdir = Path(workdir)
        self.cores, self.memory, self.timeout = cores, memory, timeout
        self.with_worker, self.with_master, self.host, self.python = worker, master, host, python
        self.port, self.webui_port = port, webui_port
        self.auth = security.auth_conf(security.read_secret(secret_file) if secret_file else None, encrypt)
        self.master: _Daemon | None = None
        self.worker: _Daemon | None = None
        self.master_url: str | None = master_url   # worker only (master=False): the master to register with
        # Command run before the worker's spark-class (it must exec it), e.g. a mount namespace in the tests.
        self.worker_prefix = tuple(worker_prefix)
        # More environment for both daemons (and so the worker's executors), e.g. the tests' JAVA_TOOL_OPTIONS.
        self.extra_env = dict(env or {})

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP",
                            "SPARK_MASTER_OPTS", "SPARK_WORKER_OPTS", "SPARK_DAEMON_JAVA_OPTS")}
        path = env.get("PATH", "")
        env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": self.host,
                    "SPARK_LOG_DIR": str(self.workdir / "logs"), "SPARK_WORKER_DIR": str(self.workdir / "work"),
                    "SPARK_NO_DAEMONIZE": "1",
                    "PATH": str(Path(self.python).parent) + (os.pathsep + path if path else "")})
        # Spark's scratch (each application's executor folders, shuffle and spill files) in the work folder, not in
        # /tmp: a tmpfs there fills RAM, and a worker that dies (machine lost, SIGKILL) leaves its folder behind
        env.setdefault("SPARK_LOCAL_DIRS", str(self.workdir / "local"))
        env.update(self.extra_env)
        return env

    def _start(self, name: str, args: list[str], pattern: re.Pattern) -> _Daemon:
        """Start one daemon; its security settings come from a 0600 properties file (never its command line),
        deleted as soon as the daemon is up (it reads the file once, at start)."""
        props = None
        if self.auth:
            props = security.write_private(security.private_dir(self.workdir / "conf") / f"{name}.properties",
                                           security.properties_text(self.auth))
            args = [*args, "--properties-file", str(props)]
        try:
            d = _Daemon(args, self.workdir / f"{name}.log", pattern, self._env(),
                        self.worker_prefix if name == "worker" else ())
            try:
                d.wait(self.timeout, f"Spark {name}", self.master_url if name == "worker" else None,
                       bool(self.auth))
            except BaseException:
                d.stop()
                raise
            return d
        finally:
            if props is not None:
                props.unlink(missing_ok=True)

    def start(self) -> str:
        security.private_dir(self.workdir)
        if self.with_master:
            self.master = self._start("master", ["org.apache.spark.deploy.master.Master", "--host", self.host,
                                                 "--port", str(self.port), "--webui-port", str(self.webui_port)],
                                      _MASTER_RE)
            self.master_url = self.master.match.group(1)
        if self.with_worker:
            self.start_worker()
        return self.master_url

    def start_worker(self) -> None:
        res = [*(["--cores", str(self.cores)] if self.cores else []),
               *(["--memory", self.memory] if self.memory else [])]
        work = security.private_dir(self.workdir / "work")
        self.worker = self._start("worker", ["org.apache.spark.deploy.worker.Worker", "--host", self.host, "--port",
                                             str(self.port if not self.with_master else 0), "--webui-port",
                                             str(self.webui_port if not self.with_master else 0), *res,
                                             "--work-dir", str(work), self.master_url], _REGISTERED_RE)

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


def serve(cluster: StandaloneCluster, announce) -> int:
    """Run `cluster`'s daemon(s) in the foreground: `announce(cluster)` once they are up, then wait until a daemon
    exits (its exit code) or Ctrl-C / SIGTERM (stops them, 0)."""
    def on_term(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_term)
    try:
        with cluster:
            announce(cluster)
            daemons = [d for d in (cluster.master, cluster.worker) if d is not None]
            done = threading.Event()
            for d in daemons:
                threading.Thread(target=lambda d=d: (d.proc.wait(), done.set()), daemon=True).start()
            try:
                done.wait()
            except KeyboardInterrupt:
                return 0
            return next(d.proc.returncode for d in daemons if d.proc.poll() is not None) or 1
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-worker"]
    with StandaloneCluster(args[0] if args else "spark-cluster", worker="--no-worker" not in sys.argv) as c:
        print(c.master_url, flush=True)
        try:
            c.master.proc.wait()
        except KeyboardInterrupt:
            pass
