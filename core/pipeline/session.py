"""One SparkSession per process, owned by one worker thread (UX-AND-ANCHORS.md "Spark inside an app").

Every Spark call runs on the owner's thread, so a GUI or CLI thread never blocks on the JVM: `submit()` returns a
`SparkJob` at once, whose `progress()` (fraction of tasks done, from `statusTracker()`) and `cancel()` (job group)
are safe to call from any thread. The session is created lazily, on the first job or on `warm()`.

Configuration follows DEPENDENCIES.md: UI and console progress off, log4j to a file at error level (driver only),
UTC, few shuffle partitions, driver memory and direct-memory cap fixed before the JVM starts. Local mode stays on
127.0.0.1 and its Python workers run this interpreter. On a standalone master (`spark://HOST:PORT`) the driver
advertises the local address that routes to the master (`driver_network`), executors run their own `python3` (or
`SparkSettings.executor_python`) and receive the project's code as a zip (`project_zip`); nothing driver-local
(paths into the checkout, this interpreter, the log4j file) is handed to them. A watchdog fails a job whose
application has had no executor for `executor_timeout` seconds (`JobFailed`) instead of waiting forever.
Runtime files live in a private folder, and the cluster's secret never reaches a command line (security.py).
"""
from __future__ import annotations

import itertools
import logging
import os
import queue
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.pipeline import DEFAULT_MASTER  # noqa: F401 - re-exported: the session's default
from core.pipeline import security
from core.pipeline.cluster_conf import PROJECT_ROOT, driver_network, is_cluster_master, no_worker_message, project_zip
from core.pipeline.jvm import JvmMismatch, ensure_jvm

EXECUTOR_TIMEOUT_S = 120.0    # default of --executor-timeout and [spark] executor_timeout

log = logging.getLogger(__name__)

ARCHIVE_SLICE_BYTES = 64 << 20


def archive_slices(sizes: list[int], parallelism: int) -> int:
    """How many Spark partitions a job over these archives (their sizes in `data`) gets: at least two per core,
    and none above ~64 MB of archives: the driver's toLocalIterator holds one partition's decoded rows at a time
    in its 2 GB heap (one partition of 1.25M rows killed the JVM at 10M). Never more than one per archive; at
    least one. The rule of hydrate and export."""
    return max(1, min(len(sizes), max(2, parallelism * 2, -(-sum(sizes) // ARCHIVE_SLICE_BYTES))))
DRIVER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
WORKER_DAEMON = "core.pipeline.worker_daemon"   # local mode's spark.python.daemon.module
_USER_LOCAL_IP = os.environ.get("SPARK_LOCAL_IP")   # as the process started, before prepare_environment set it

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %p %c: %m%n
# pyspark counts as a REPL: without this Spark resets the root level to WARN and says so on stderr
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = error
logger.context.name = org.apache.spark.SparkContext
logger.context.level = error
"""


class JobCancelled(Exception):
    """A Spark job was cancelled through its job group; nothing it would have written was written."""


class JobFailed(Exception):
    """A Spark job could not run (e.g. no worker left on a standalone master); the message is one line for the user."""


@dataclass
class SparkSettings:
    master: str = DEFAULT_MASTER              # "local[*]" or "spark://host:port"
    app_name: str = "archivist"
    driver_memory: str = "2g"
    executor_memory: str = "1g"
    max_direct_memory: str = "1g"             # big blobs travel through Python workers; cap off-heap use
    # The driver's JVM mostly schedules Python workers: the client JIT (C1) and the serial collector cut its CPU
    # per build ~4x (docs/BENCHMARKS.md "Spark on a cluster"); "" gives the JVM's defaults (C2, G1) back.
    driver_jvm_options: str = DRIVER_JVM_OPTIONS
    shuffle_partitions: int = 4
    log_dir: str | None = None                # Spark's own log file goes here (default: security.runtime_dir())
    driver_host: str | None = None            # address executors connect to (default: see driver_network)
    driver_bind: str | None = None            # address the driver listens on (default: driver_host)
    driver_port: int | None = None            # fixed ports for firewalls / NAT (default: any free port)
    block_manager_port: int | None = None
    executor_python: str | None = None        # cluster mode: the executors' interpreter (default: their python3)
    executor_timeout: float = EXECUTOR_TIMEOUT_S  # cluster mode: fail a job after this long without any executor
    pyfiles_cache: str | None = None          # where project_zip() keeps its zips (default: ~/.cache/archivist)
    secret_file: str | None = None            # cluster's shared secret (spark.authenticate), a 0600 file
    encrypt: bool = False                     # spark.network.crypto.enabled (needs secret_file)
    stage_dir: str | None = None              # cluster mode: shared folder the driver stages windows in (stage.py)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def cluster(self) -> bool:
        return is_cluster_master(self.master)

    def network(self) -> dict[str, str]:
        return driver_network(self.master, host=self.driver_host, bind=self.driver_bind, port=self.driver_port,
                              block_manager_port=self.block_manager_port)

    def python_exec(self) -> str:
        """What Spark runs as the Python worker (`sc.pythonExec`): on the executors, and on the driver to plan
        Python data sources. Local mode: this interpreter. Cluster: `executor_python`, else each machine's python3."""
        return (self.executor_python or "python3") if self.cluster else sys.executable

    def py_files(self) -> list[Path]:
        """Code shipped with the job (cluster mode only; local executors import the checkout directly)."""
        return [project_zip(self.pyfiles_cache)] if self.cluster else []

    def secret_conf(self) -> dict[str, str]:
        """Authentication/encryption settings (reads the secret file; raises SparkSecurityError). Never part of
        `conf()`: those values end up on the JVM's command line, these are set through py4j."""
        secret = security.read_secret(self.secret_file) if self.secret_file else None
        return security.auth_conf(secret, self.encrypt)

    def security_warning(self) -> str | None:
        return security.insecure_master_warning(self.master, secret=bool(self.secret_file), encrypt=self.encrypt)

    def conf(self) -> dict[str, str]:
        log_dir = security.private_dir(self.log_dir) if self.log_dir else security.runtime_dir()
        props = security.write_private(log_dir / "log4j2.properties", _LOG4J.format(path=log_dir / "spark.log"))
        security.touch_private(log_dir / "spark.log")   # log4j appends to it and keeps its mode
        memory_opts = f"-XX:MaxDirectMemorySize={self.max_direct_memory}"
        python = self.python_exec()
        conf = {
            **self.network(),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.default.parallelism": str(max(2, self.shuffle_partitions)),
            "spark.driver.memory": self.driver_memory,
            "spark.executor.memory": self.executor_memory,
            # The log4j file is the driver's: executors log with their worker's configuration (work/app-*/*/stderr).
            "spark.driver.extraJavaOptions": " ".join(filter(None, (memory_opts, self.driver_jvm_options,
                                                                    f"-Dlog4j2.configurationFile=file:{props}"))),
            "spark.executor.extraJavaOptions": memory_opts,
            "spark.pyspark.python": python,
            "spark.pyspark.driver.python": sys.executable,
            "spark.executorEnv.PYSPARK_PYTHON": python,
            "spark.python.worker.reuse": "true",
            "spark.sql.execution.pyspark.udf.faulthandler.enabled": "true",
            # Arrow batches into Python workers: bounded by bytes too, so 1 MB payloads don't make 10 GB batches.
            "spark.sql.execution.arrow.maxBytesPerBatch": str(64 << 20),
        }
        if not self.cluster:   # local executors are this process: they import the checkout
            conf["spark.executorEnv.PYTHONPATH"] = str(PROJECT_ROOT)
            # Task workers fork from a daemon that has imported pyspark's worker and our task modules
            # (worker_daemon.py); not on a cluster: executors' daemons start before our code reaches them (addPyFile).
            conf["spark.python.daemon.module"] = WORKER_DAEMON
        conf.update(self.extra)
        return conf


def prepare_environment(settings: SparkSettings | None = None) -> None:
    """Environment of the driver's JVM and its Python workers (DEPENDENCIES.md, Spark row). pyspark reads
    PYSPARK_PYTHON when the context starts and hands it to every Python function (`sc.pythonExec`)."""
    settings = settings or SparkSettings()
    python = settings.python_exec()
    os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if settings.cluster:
        net = settings.network()
        bind = net["spark.driver.bindAddress"]
        os.environ["SPARK_LOCAL_IP"] = net["spark.driver.host"] if bind in ("0.0.0.0", "::") else bind
        # The driver also plans Python data sources with `python3`: on this machine that is this interpreter
        # (what activating its venv would do); workers resolve python3 on their own PATH.
        here = Path(sys.executable).parent
        if os.sep not in python and (here / python).exists():
            path = os.environ.get("PATH", "")
            if str(here) not in path.split(os.pathsep):
                os.environ["PATH"] = str(here) + (os.pathsep + path if path else "")
    else:   # the user's own setting, else loopback (never what an earlier cluster session of this process set)
        os.environ["SPARK_LOCAL_IP"] = _USER_LOCAL_IP or "127.0.0.1"
    # The driver's own Python workers import core.* from the checkout even when it is not installed.
    root = str(PROJECT_ROOT)
    pp = os.environ.get("PYTHONPATH", "")
    if root not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = root + (os.pathsep + pp if pp else "")


class SparkJob:
    """A job submitted to the owner thread. `progress()` and `cancel()` are callable from any thread."""

    def __init__(self, owner: "SparkOwner", group: str, description: str):
        self.owner = owner
        self.group = group
        self.description = description
        self.future: Future = Future()
        self.cancel_requested = threading.Event()
        self.failure: JobFailed | None = None  # set by the owner's watchdog; reported instead of what Spark raised
        self.expected_tasks = 0  # set by jobs that run several Spark jobs (toLocalIterator) to keep progress monotone

    def result(self, timeout: float | None = None) -> Any:
        return self.future.result(timeout)

    def done(self) -> bool:
        return self.future.done()

    def cancel(self) -> None:
        """Cancel the job group; the job raises JobCancelled. Before the job starts, it simply never runs."""
        self.cancel_requested.set()
        spark = self.owner.spark_if_started
        if spark is not None:
            spark.sparkContext.cancelJobGroup(self.group)

    def check_cancelled(self) -> None:
        """Called by job code between steps (Spark only cancels what runs inside Spark)."""
        if self.cancel_requested.is_set():
            raise JobCancelled(f"{self.description} cancelled")

    def progress(self) -> float:
        """Fraction of tasks done over all stages of this job's Spark jobs so far (1.0 when finished)."""
        if self.future.done():
            return 1.0
        spark = self.owner.spark_if_started
        if spark is None:
            return 0.0
        tracker = spark.sparkContext.statusTracker()
        done = total = 0
        for jid in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(jid)
            if info is None:
                continue
            for sid in info.stageIds:
                st = tracker.getStageInfo(sid)
                if st is not None:
                    done += st.numCompletedTasks
                    total += st.numTasks
        total = max(total, self.expected_tasks)
        return min(1.0, done / total) if total else 0.0


class SparkOwner:
    """Owns the process's SparkSession on one daemon thread; runs submitted callables there, in order."""

    _ids = itertools.count(1)

    def __init__(self, settings: SparkSettings | None = None, *, log_warnings: bool = True):
        self.settings = settings or SparkSettings()
        self.log_warnings = log_warnings   # the CLI prints the insecure-master warning itself
        self._queue: queue.Queue = queue.Queue()
        self._spark = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="spark-owner", daemon=True)
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    @property
    def spark_if_started(self):
        return self._spark

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            job, fn = item
            if job.cancel_requested.is_set():
                job.future.set_exception(JobCancelled(f"{job.description} cancelled before it started"))
                continue
            if not job.future.set_running_or_notify_cancel():
                continue
            stop_watch = threading.Event()
            try:
                spark = self._session()
                if self.settings.cluster:
                    threading.Thread(target=self._watch_workers, args=(job, spark, stop_watch), daemon=True,
                                     name=f"spark-watchdog-{job.group}").start()
                spark.sparkContext.setJobGroup(job.group, job.description, interruptOnCancel=True)
                try:
                    res = fn(spark, job)
                finally:
                    stop_watch.set()
                    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
                job.future.set_result(res)
            except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
                stop_watch.set()
                job.future.set_exception(_translate_cancel(e, job))
        self._stop_session()

    def _watch_workers(self, job: SparkJob, spark, stop: threading.Event, interval: float = 1.0) -> None:
        """Cluster mode: while the job runs, fail it once the application has had no executor for
        `executor_timeout` s (every worker dead or none started; Spark itself would wait forever at 0 %)."""
        sc = spark.sparkContext
        watch = ExecutorWatch(self.settings.executor_timeout)
        while not stop.wait(interval):
            try:
                executors = executor_count(sc)
            except Exception:  # noqa: BLE001 - the context is stopping; the job ends on its own
                return
            if watch.observe(executors):
                if job.failure is None:
                    job.failure = JobFailed(no_worker_message(self.settings.master))
                try:   # again every interval: a Spark job the code submits after this one is cancelled too
                    sc.cancelJobGroup(job.group)
                except Exception:  # noqa: BLE001
                    return

    def _session(self):
        if self._spark is None:
            s = self.settings
            warning = s.security_warning()
            if warning and self.log_warnings:
                log.warning(warning)
            secret_conf = s.secret_conf()
            prepare_environment(s)
            conf = s.conf()
            from pyspark import SparkContext
            from pyspark.sql import SparkSession
            try:   # the JVM launched with these settings (a fresh one if the process's JVM has others: jvm.py)
                ensure_jvm(conf)
            except JvmMismatch as e:
                raise JobFailed(str(e)) from None
            if s.cluster:
                refusal = security.probe_master(SparkContext._jvm, s.master, conf["spark.driver.host"],
                                                secret_conf)
                if refusal:
                    raise JobFailed(refusal)
            b = SparkSession.builder.master(s.master).appName(s.app_name)
            for k, v in {**conf, **secret_conf}.items():
                b = b.config(k, v)
            spark = b.getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
            for path in self.settings.py_files():   # before any Python function is wrapped (sources, UDFs)
                spark.sparkContext.addPyFile(str(path))
            # Our data sources are registered by the first job that reads one (source.register_sources).
            self._spark = spark
        return self._spark

    def submit(self, fn: Callable[[Any, SparkJob], Any], description: str = "archivist job") -> SparkJob:
        """Queue `fn(spark, job)` on the owner thread; returns at once."""
        if self._closed:
            raise RuntimeError("Spark owner is closed")
        job = SparkJob(self, f"archivist-{os.getpid()}-{next(self._ids)}", description)
        self._queue.put((job, fn))
        return job

    def warm(self) -> SparkJob:
        """Start the JVM and run one tiny job in the background (the ~12 s cold start, off the caller's thread)."""
        return self.submit(_warm_up, "warm-up")

    def close(self, timeout: float = 60.0) -> None:
        """Stop the session and the thread (waits for queued jobs)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout)

    def _stop_session(self) -> None:
        if self._spark is not None:
            try:
                self._spark.stop()
            finally:
                self._spark = None


def _warm_up(spark, job) -> int:
    """Start the JVM, then run one real (tiny) build read+encode so Python workers have imported everything; then,
    if this JVM had no class-data archive, start its maker in the background (cds.py: the next start is fast)."""
    from core.pipeline import cds, jvm
    from core.pipeline.spark_encode import warm_up_build
    n = warm_up_build(spark)
    cds.start_maker(jvm.launched_conf())
    return n


class ExecutorWatch:
    """The watchdog's rule, apart from Spark: `observe(executors)` after each look at the application's executors
    says whether to give up, which it does once `timeout` s of `clock` have passed since the watch began or since
    the last look that saw an executor (an executor that comes back in time resets it). Never before."""

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic):
        self.timeout = timeout
        self.clock = clock
        self.since = clock()

    def observe(self, executors: int) -> bool:
        now = self.clock()
        if executors > 0:
            self.since = now
            return False
        return now - self.since >= self.timeout


def executor_count(sc) -> int:
    """Executors registered with the application now (the driver's own block manager is not one)."""
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    return max(0, len(infos) - 1)


def _translate_cancel(e: BaseException, job: SparkJob) -> BaseException:
    if job.failure is not None and isinstance(e, Exception):
        err = job.failure
        err.__cause__ = e
        return err
    if isinstance(e, JobCancelled):
        return e
    if job.cancel_requested.is_set() and isinstance(e, Exception):
        # Whatever Spark raised after cancelJobGroup (Py4JJavaError, "Job ... cancelled"): report it as a cancel.
        err = JobCancelled(f"{job.description} cancelled")
        err.__cause__ = e
        return err
    return e


_default: SparkOwner | None = None
_default_lock = threading.Lock()


def default_owner(settings: SparkSettings | None = None) -> SparkOwner:
    """The process-wide owner (created on first use; `settings` only matter the first time)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = SparkOwner(settings)
        return _default
