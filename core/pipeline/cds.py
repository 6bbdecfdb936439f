"""The driver JVM's class-data-sharing archive (AppCDS): Spark's classes mapped from one file instead of parsed from
280 jars at every start (docs/PIPELINE.md "Class-data archive"; issue 17: the JVM start off the user's path).

One rule, in one place:
- **Where**: `ARCHIVIST_SPARK_CDS` = a file path (that file, its sidecar beside it as `PATH.json`), = "off" (no
  archive, no maker); unset: the user's cache folder, `spark-cds/driver-<key>.jsa`.
- **Key**: what makes an archive usable by a JVM: `java -version` of the java that pyspark will run, pyspark's
  version, the driver's class path (SPARK_CONF_DIR, every jar of SPARK_HOME/jars by name, size and mtime,
  spark.driver.extraClassPath) and the driver's JVM options that the JVM checks against the archive
  (`KEY_OPTIONS`, also when they come from JAVA_TOOL_OPTIONS and the like, and whether the heap is 32 GiB or more:
  compressed oops). Tuning flags (JIT, GC, -Xlog, memory
  below 32g) do not matter: the JVM accepts the archive with them.
- **Use** (`launch_conf`): the archive is added to the driver's command line only when it is whole (the sidecar
  names this key and the file's size, and the file starts with a dynamic archive's magic); otherwise nothing is
  added and the start goes on as before. A start never fails because of the archive.
- **Make** (`cds_make.make_archive`, started by `start_maker` in a separate niced process, one at a time under a
  lock file): a local session with `-XX:ArchiveClassesAtExit=<tmp>` runs a one-message build in both plans and a
  small SQL query (the pipeline's own code paths: `cds_make.exercise`), the JVM exits, and only if it exited
  cleanly and `java -Xshare:on -XX:SharedArchiveFile=<tmp> -version` with the same class path accepts the file is
  it renamed into place, its sidecar after it (a maker that failed leaves a note: warm-ups do not retry that key).
  Archives of other keys in the cache folder are removed (a cache, not user data).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "ARCHIVIST_SPARK_CDS"
OPTION = "-XX:SharedArchiveFile="
DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")      # 0xf00baba8, little-endian: a dynamic (top layer) archive
MIN_SIZE = 1 << 20
# Options the JVM checks against an archive (a mismatch makes it refuse the archive, or changes the class path).
KEY_OPTIONS = ("-XX:+UseCompressedOops", "-XX:-UseCompressedOops", "-XX:+UseCompressedClassPointers",
               "-XX:-UseCompressedClassPointers", "-XX:ObjectAlignmentInBytes", "-XX:SharedBaseAddress",
               "--patch-module", "--limit-modules", "--upgrade-module-path", "--module-path", "-Xbootclasspath",
               "-Djava.system.class.loader", "-XX:+AllowArchivingWithJavaAgent", "-javaagent", "-Xshare",
               OPTION, "-XX:ArchiveClassesAtExit")

_version_cache: dict[tuple, str] = {}
_version_lock = threading.Lock()


def setting() -> str | None:
    """"off", a path, or None (the cache folder)."""
    v = os.environ.get(ENV, "").strip()
    return None if not v else "off" if v.lower() == "off" else v


def spark_home() -> Path:
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    from pyspark.find_spark_home import _find_spark_home
    return Path(_find_spark_home())


def java_binary() -> str | None:
    """The java pyspark's launcher (bin/spark-class) runs: $JAVA_HOME/bin/java, else the one on PATH."""
    if os.environ.get("JAVA_HOME"):
        return str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    return shutil.which("java")


JAVA_ENV_OPTIONS = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")
"""Options the JVM (or its launcher) reads from the environment: their tokens count for the key like the driver's
own (key_options), and they are kept out of `java -version`, which would print them ("Picked up ...")."""


def java_version(java: str) -> str:
    """`java -version` (its stderr) of the JVM itself, without JAVA_ENV_OPTIONS, remembered per binary and mtime:
    one 0.1-0.2 s call per process."""
    real = os.path.realpath(java)
    st = os.stat(real)
    k = (real, st.st_mtime_ns, st.st_size)
    with _version_lock:
        if k not in _version_cache:
            env = {n: v for n, v in os.environ.items() if n not in JAVA_ENV_OPTIONS}
            r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, env=env)
            _version_cache[k] = r.stderr.strip()
        return _version_cache[k]


def _tokens(options: str) -> list[str]:
    try:
        return shlex.split(options or "")
    except ValueError:
        return (options or "").split()


def key_options(driver_options: str, driver_memory: str | None = None) -> list[str]:
    """The part of the driver's JVM options that decides whether an archive is usable."""
    keep = [t for t in _tokens(driver_options) if t.startswith(KEY_OPTIONS)]
    if _big_heap(driver_memory) or any(t.startswith("-Xmx") and _big_heap(t[4:]) for t in _tokens(driver_options)):
        keep.append("heap>=32g")
    return keep


def _big_heap(size: str | None) -> bool:
    if not size:
        return False
    s = size.strip().lower().rstrip("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    try:
        n = float(s[:-1]) * units[s[-1]] if s[-1] in units else float(s)
    except (ValueError, IndexError):
        return False
    return n >= 32 << 30


def key(conf: dict[str, str]) -> str | None:
    """The archive's key for a driver launched now with `conf` (None: no java found)."""
    java = java_binary()
    if not java or not os.path.exists(java):
        return None
    home = spark_home()
    jars = home / "jars"
    listing = sorted((p.name, st.st_size, st.st_mtime_ns) for p in jars.iterdir() if (st := p.stat()))
    import pyspark
    desc = {
        "java": java_version(java),
        "pyspark": pyspark.__version__,
        "spark_home": str(home),
        "conf_dir": os.environ.get("SPARK_CONF_DIR") or str(home / "conf"),
        "jars": listing,
        "extra_class_path": conf.get("spark.driver.extraClassPath", ""),
        "options": key_options(" ".join([*(os.environ.get(n, "") for n in JAVA_ENV_OPTIONS),
                                         conf.get("spark.driver.extraJavaOptions", "")]),
                               conf.get("spark.driver.memory")),
    }
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:24]


def cache_dir() -> Path:
    import platformdirs
    return Path(platformdirs.user_cache_dir("archivist", "archivist")) / "spark-cds"


def archive_path(k: str) -> Path | None:
    """Where the archive of key `k` lives (None when turned off)."""
    s = setting()
    if s == "off":
        return None
    return Path(s) if s else cache_dir() / f"driver-{k}.jsa"


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def check(path: Path, k: str) -> str | None:
    """None when `path` is a whole archive of key `k`; else why not (one line)."""
    try:
        meta = json.loads(sidecar(path).read_text())
        size = path.stat().st_size
        with open(path, "rb") as f:
            magic = f.read(4)
    except FileNotFoundError as e:
        return f"missing: {e.filename}"
    except (OSError, ValueError) as e:
        return f"unreadable: {e}"
    if not isinstance(meta, dict) or meta.get("key") != k:
        return "made for another JVM, Spark or option set"
    if meta.get("size") != size or size < MIN_SIZE:
        return f"size {size} is not the {meta.get('size')} it was made with (damaged)"
    if magic != DYNAMIC_MAGIC:
        return "not a dynamic class-data archive (bad magic)"
    return None


def state(conf: dict[str, str]) -> tuple[Path | None, str | None, str | None]:
    """(path, key, why it is not usable or None) for a driver launched with `conf`; path None = off or no java."""
    if setting() == "off" or _user_chose(conf.get("spark.driver.extraJavaOptions", "")):
        return None, None, "off"
    try:
        k = key(conf)
    except OSError as e:
        return None, None, f"no key: {e}"
    if k is None:
        return None, None, "no java found"
    path = archive_path(k)
    return path, k, check(path, k)


def _user_chose(options: str) -> bool:
    """The user's own options already say what to do with class-data sharing: leave them alone."""
    return any(t.startswith((OPTION, "-Xshare", "-XX:ArchiveClassesAtExit")) for t in _tokens(options))


def splits_safely(path: Path) -> bool:
    """Whether `path` survives in a JVM option string (Spark's extraJavaOptions, JAVA_TOOL_OPTIONS), which are split
    on blanks and quotes: no blank, quote or backslash in it."""
    return not re.search(r"[\s'\"\\]", str(path))


def launch_conf(conf: dict[str, str]) -> dict[str, str]:
    """`conf` with the archive on the driver's command line when a whole one exists for it; else `conf` as is."""
    try:
        path, _, why = state(conf)
    except Exception as e:  # noqa: BLE001 - never fail a start because of the archive
        log.info("Spark class-data archive not used: %s", e)
        return conf
    if path is None or why is not None:
        if path is not None and not why.startswith("missing"):
            log.info("Spark class-data archive %s ignored: %s", path, why)
        return conf
    if not splits_safely(path):
        log.info("Spark class-data archive not used: its path %r has a blank or a quote", str(path))
        return conf
    opts = conf.get("spark.driver.extraJavaOptions", "")
    return {**conf, "spark.driver.extraJavaOptions": f"{opts} {OPTION}{path}".strip()}


def without_archive(options: str | None) -> str | None:
    """The driver's options minus the archive option `launch_conf` adds (jvm.py compares launches without it: a
    JVM started before the archive existed runs the same)."""
    if options is None or OPTION not in options:
        return options
    return re.sub(r"(^|\s+)" + re.escape(OPTION) + r"\S+", "", options).strip()


# ---- making one ---------------------------------------------------------------------------------------------

def start_maker(conf: dict[str, str] | None) -> subprocess.Popen | None:
    """After a warm-up: if no whole archive exists for `conf` (the launch's), make one in a separate process at
    low priority and return at once (a thread reaps it). None when off, already there, no java, or on any error
    (logged: the archive is only ever a speed-up)."""
    if conf is None:
        return None
    try:
        return _start_maker(conf)
    except Exception as e:  # noqa: BLE001
        log.info("Spark class-data archive: maker not started: %s", e)
        return None


def _start_maker(conf: dict[str, str]) -> subprocess.Popen | None:
    path, k, why = state(conf)
    if path is None or why is None:
        return None
    if failed_before(path, k):     # not again at every start: a new key (JDK, pyspark, options) tries again
        return None
    cmd = [sys.executable, "-m", "core.pipeline.cds_make", "--path", str(path), "--key", k,
           f"--options={conf.get('spark.driver.extraJavaOptions', '')}",   # "=": the value starts with "-"
           "--memory", conf.get("spark.driver.memory", "2g")]
    from core.pipeline.cluster_conf import PROJECT_ROOT
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(PROJECT_ROOT),
                                                                     os.environ.get("PYTHONPATH"))))}
    log.info("making the Spark class-data archive %s in the background (%s)", path, why)
    proc = subprocess.Popen(["nice", "-n", "10", *cmd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    threading.Thread(target=proc.wait, name="spark-cds-maker", daemon=True).start()
    return proc


def failure_note(path: Path) -> Path:
    return path.with_name(path.name + ".failed.json")


def failed_before(path: Path, k: str) -> str | None:
    """Why the last maker of key `k` failed (its note beside the archive), else None."""
    try:
        note = json.loads(failure_note(path).read_text())
    except (OSError, ValueError):
        return None
    return note.get("why") if isinstance(note, dict) and note.get("key") == k else None


@contextlib.contextmanager
def maker_lock(path: Path, *, wait: bool):
    """One maker per archive path (flock on `PATH.lock`); yields False when another holds it and wait is False."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def remove_others(keep: Path) -> None:
    """Archives of other keys in the cache folder go, each only while no maker of its own holds its lock (lock
    files stay: they are empty, and removing one a process holds would break the one-maker rule)."""
    stems = {p.name.split(".jsa")[0] for p in keep.parent.glob("driver-*.jsa*")}
    for stem in stems - {keep.name.split(".jsa")[0]}:
        with maker_lock(keep.parent / f"{stem}.jsa", wait=False) as held:
            if held:
                for p in keep.parent.glob(f"{stem}.jsa*"):
                    if not p.name.endswith(".lock"):
                        p.unlink(missing_ok=True)


def accepted(archive: Path, classpath: str, driver_options: str = "") -> str | None:
    """None when the JVM maps `archive` with `classpath` (-Xshare:on fails instead of running without); else why."""
    opts = [t for t in _tokens(driver_options) if t.startswith(KEY_OPTIONS) and not t.startswith(
        (OPTION, "-Xshare", "-XX:ArchiveClassesAtExit"))]
    r = subprocess.run([java_binary(), "-Xshare:on", f"{OPTION}{archive}", *opts, "-cp", classpath, "-version"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "the JVM refuses it: " + " ".join(r.stderr.split())[:300]
    return None
