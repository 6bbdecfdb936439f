"""One SparkSession per process, owned by one worker thread (UX-AND-ANCHORS.md "Spark inside an app").

Every Spark call runs on the owner's thread, so a GUI or CLI thread never blocks on the JVM: `submit()` returns a
`SparkJob` at once, whose `progress()` (fraction of tasks done, from `statusTracker()`) and `cancel()` (job group)
are safe to call from any thread. The session is created lazily, on the first job or on `warm()`.

Configuration follows DEPENDENCIES.md: loopback only, UI and console progress off, log4j to a file at error level,
UTC, few shuffle partitions, driver memory and direct-memory cap fixed before the JVM starts, and the Python
workers run this interpreter (`PYSPARK_PYTHON = sys.executable`).
"""
from __future__ import annotations

import itertools
import os
import queue
import sys
import tempfile
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

DEFAULT_MASTER = "local[*]"

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


@dataclass
class SparkSettings:
    master: str = DEFAULT_MASTER              # "local[*]" or "spark://host:port"
    app_name: str = "archivist"
    driver_memory: str = "2g"
    executor_memory: str = "1g"
    max_direct_memory: str = "1g"             # big blobs travel through Python workers; cap off-heap use
    shuffle_partitions: int = 4
    log_dir: str | None = None                # Spark's own log file goes here (default: a temp folder)
    extra: dict[str, str] = field(default_factory=dict)

    def conf(self) -> dict[str, str]:
        log_dir = Path(self.log_dir or Path(tempfile.gettempdir()) / f"archivist-spark-{os.getuid()}")
        log_dir.mkdir(parents=True, exist_ok=True)
        props = log_dir / "log4j2.properties"
        props.write_text(_LOG4J.format(path=log_dir / "spark.log"))
        java_opts = f"-XX:MaxDirectMemorySize={self.max_direct_memory} -Dlog4j2.configurationFile=file:{props}"
        conf = {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.default.parallelism": str(max(2, self.shuffle_partitions)),
            "spark.driver.memory": self.driver_memory,
            "spark.executor.memory": self.executor_memory,
            "spark.driver.extraJavaOptions": java_opts,
            "spark.executor.extraJavaOptions": java_opts,
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
            "spark.executorEnv.PYTHONPATH": str(Path(__file__).resolve().parents[2]),  # executors import core.*
            "spark.python.worker.reuse": "true",
            "spark.sql.execution.pyspark.udf.faulthandler.enabled": "true",
            # Arrow batches into Python workers: bounded by bytes too, so 1 MB payloads don't make 10 GB batches.
            "spark.sql.execution.arrow.maxBytesPerBatch": str(64 << 20),
        }
        conf.update(self.extra)
        return conf


def prepare_environment() -> None:
    """Environment the JVM and its Python workers must see (DEPENDENCIES.md, Spark row)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Executors import core.*: make the project importable even when it is not installed.
    root = str(Path(__file__).resolve().parents[2])
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

    def __init__(self, settings: SparkSettings | None = None):
        self.settings = settings or SparkSettings()
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
            try:
                spark = self._session()
                spark.sparkContext.setJobGroup(job.group, job.description, interruptOnCancel=True)
                try:
                    res = fn(spark, job)
                finally:
                    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
                job.future.set_result(res)
            except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
                job.future.set_exception(_translate_cancel(e, job))
        self._stop_session()

    def _session(self):
        if self._spark is None:
            prepare_environment()
            from pyspark.sql import SparkSession
            b = SparkSession.builder.master(self.settings.master).appName(self.settings.app_name)
            for k, v in self.settings.conf().items():
                b = b.config(k, v)
            spark = b.getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
            from core.pipeline.source import register_sources
            register_sources(spark)
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
    """Start the JVM, then run one real (tiny) build read+encode so Python workers have imported everything."""
    from core.pipeline.build import warm_up_build
    return warm_up_build(spark)


def _translate_cancel(e: BaseException, job: SparkJob) -> BaseException:
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
