"""The process's one JVM (pyspark's py4j gateway): what it was launched with, relaunched or refused on a change.

pyspark starts one JVM per process, on the first SparkContext, and reuses it for every later one: its environment
(SPARK_LOCAL_IP, PYSPARK_PYTHON, PATH, PYTHONPATH, ...) and its command line (driver memory, driver Java options)
are fixed at that moment. A second session built in the same process with other settings (the GUI switching from
local mode to a cluster and restarting the node in process, another driver address or memory) would silently run
with the first one's. `ensure_jvm` remembers what the running JVM was launched with; when a session asks for
something else it stops that JVM and launches a fresh one if no SparkContext is active, and refuses with
`JvmMismatch`, naming what differs, while one is (its jobs would be broken under it). A JVM with an active
context that this module did not launch (a notebook's, spark-submit's own session) is used as it is.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import threading

from core.pipeline import cds

# What the driver's JVM reads from its environment at launch (and hands on to the Python workers it starts).
LAUNCH_ENV = ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PATH", "PYTHONPATH", "JAVA_HOME",
              "SPARK_HOME", "SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS")
# Settings Spark applies only when the JVM starts (spark-submit's command line); a later SparkContext's conf
# shows the new value but the JVM keeps the old one.
LAUNCH_CONF = ("spark.driver.memory", "spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions",
               "spark.driver.extraClassPath", "spark.driver.extraLibraryPath", "spark.jars", "spark.jars.packages")
UNKNOWN = "(a JVM this module did not launch)"


def launched_conf() -> dict[str, str] | None:
    """The conf this module launched the running JVM with (None: no JVM, or not launched here)."""
    return _launched_conf


class JvmMismatch(RuntimeError):
    """A session asks for another JVM launch environment while a SparkContext still runs on the current JVM."""


_lock = threading.Lock()
_launched: dict[str, str | None] | None = None   # launch_environment() of the JVM that SparkContext._gateway holds
_launched_conf: dict[str, str] | None = None     # the conf it was launched with (the class-data archive's key)


def launch_environment(conf: dict[str, str]) -> dict[str, str | None]:
    """The part of (os.environ, conf) that a JVM launched now would keep for its whole life. The class-data
    archive's option (cds.py) is left out: a JVM launched before the archive existed behaves the same."""
    env = {f"${k}": os.environ.get(k) for k in LAUNCH_ENV}
    return {**env, **{k: cds.without_archive(conf.get(k)) if k == "spark.driver.extraJavaOptions" else conf.get(k)
                      for k in LAUNCH_CONF}}


def differences(old: dict[str, str | None] | None, new: dict[str, str | None]) -> list[str]:
    """`name: old -> new` for each setting that differs (`$NAME` is an environment variable)."""
    if old is None:
        return [UNKNOWN]
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


def ensure_jvm(conf: dict[str, str]) -> None:
    """Make sure this process's JVM was launched with `conf` and the current environment (launch it if there is
    none). Call after the environment is prepared and before the SparkSession is built."""
    from pyspark import SparkConf, SparkContext
    global _launched, _launched_conf
    want = launch_environment(conf)
    with _lock:
        if SparkContext._gateway is not None and _launched != want:
            active = SparkContext._active_spark_context is not None
            if _launched is None and active:   # launched and in use by someone else (a notebook, spark-submit's
                return                         # own session): what it was launched with is not ours to know
            diff = differences(_launched, want)
            if active:
                raise JvmMismatch("Spark is already running in this process with another launch environment ("
                                  + "; ".join(diff) + "): stop the running session first")
            shutdown_jvm()
        if SparkContext._gateway is None:
            # The plain settings become the JVM's command line (the secret goes in later through py4j), with the
            # class-data archive when a whole one exists for them.
            launch = cds.launch_conf(conf)
            with spawn_without_fork():
                SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(launch.items())))
            _launched, _launched_conf = want, dict(conf)


@contextlib.contextmanager
def spawn_without_fork():
    """pyspark launches the JVM with Popen(preexec_fn=...) to keep a terminal's Ctrl+C from it; a preexec_fn makes
    subprocess fork() the whole process (page tables copied) while holding the GIL: ~100 ms of a 1.5 GB window's GUI
    thread (docs/GUI.md, `python -m gui.measure fork`). start_new_session=True keeps Ctrl+C away just the same (the
    JVM is in no terminal's foreground group) and lets subprocess use vfork. Only inside ensure_jvm's lock."""
    from pyspark import java_gateway
    real = java_gateway.Popen

    def popen(cmd, **kw):
        kw.pop("preexec_fn", None)
        return real(cmd, **{**kw, "start_new_session": True})
    java_gateway.Popen = popen
    try:
        yield
    finally:
        java_gateway.Popen = real


def shutdown_jvm(timeout: float = 30.0) -> None:
    """Stop this process's JVM (no SparkContext may be active): close the py4j gateway, then the JVM's stdin
    (pyspark's gateway server exits on EOF), and wait for it; the next SparkContext launches a new one."""
    from pyspark import SparkContext
    global _launched, _launched_conf
    gateway = SparkContext._gateway
    if gateway is None:
        return
    SparkContext._gateway = None
    SparkContext._jvm = None
    _launched = _launched_conf = None
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM may already be gone; the process below is what matters
        pass
    proc = getattr(gateway, "proc", None)
    if proc is None:       # attached to a JVM someone else started (PYSPARK_GATEWAY_PORT): not ours to stop
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
