"""Makes the driver's class-data archive (the rule is core/pipeline/cds.py's): `python -m core.pipeline.cds_make`,
started by the session after its warm-up (cds.start_maker) in a separate process at low priority, or by hand. Apart
from cds.py because it runs a Spark session of its own (cds.py stays below session.py and jvm.py)."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from core.pipeline import cds


def make_archive(path: Path, k: str, driver_options: str, driver_memory: str = "2g", *,
                 wait: bool = False) -> str:
    """Make the archive of key `k` at `path` (see the module's docstring). Returns what happened, one line:
    "made", "present", "busy" (another maker holds the lock) or "failed: ...". Never leaves a partial file."""
    with cds.maker_lock(path, wait=wait) as held:
        if not held:
            return "busy"
        if cds.check(path, k) is None:
            return "present"
        cleanup = cds.setting() is None     # the cache folder is ours; a path the user named holds one archive
        for stale in path.parent.glob(f"{path.name}.*.tmp*"):   # left by a maker that was killed
            stale.unlink(missing_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        tmp.unlink()    # the JVM writes it at exit
        try:
            try:
                why = _dump(tmp, driver_options, driver_memory)
            except Exception as e:  # noqa: BLE001 - reported as one line; nothing is kept
                why = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            if why:
                cds.failure_note(path).write_text(json.dumps({"key": k, "why": why}))
                return f"failed: {why}"
            meta = {"key": k, "size": tmp.stat().st_size, "java": cds.java_version(cds.java_binary()),
                    "options": driver_options}
            side_tmp = tmp.with_name(tmp.name + ".json")
            side_tmp.write_text(json.dumps(meta, indent=1))
            for p in (tmp, side_tmp):
                with open(p, "rb") as f:
                    os.fsync(f.fileno())
            cds.sidecar(path).unlink(missing_ok=True)   # never a new archive beside an old sidecar
            os.replace(tmp, path)
            os.replace(side_tmp, cds.sidecar(path))
            cds.failure_note(path).unlink(missing_ok=True)
        finally:
            tmp.unlink(missing_ok=True)
            tmp.with_name(tmp.name + ".json").unlink(missing_ok=True)
        if cleanup:
            cds.remove_others(path)
        return "made"


def _dump(tmp: Path, driver_options: str, driver_memory: str) -> str | None:
    """Run a local session whose JVM writes its loaded classes to `tmp` at exit; None when the file is whole."""
    from core.pipeline.session import DRIVER_JVM_OPTIONS, SparkOwner, SparkSettings
    # the JIT and GC flags of a driver (they do not matter to the archive), the options of the key, and the dump
    # at exit (which also keeps jvm.py from giving this launch an archive: _user_chose)
    opts = [DRIVER_JVM_OPTIONS, *(t for t in cds.key_options(driver_options) if t != "heap>=32g"),
            f"-XX:ArchiveClassesAtExit={tmp}"]
    with tempfile.TemporaryDirectory(prefix="archivist-cds-") as logs:
        owner = SparkOwner(SparkSettings(master="local[2]", driver_memory=driver_memory, log_dir=logs,
                                         driver_jvm_options=" ".join(opts)), log_warnings=False)
        try:
            classpath = owner.submit(lambda spark, job: spark.sparkContext._jvm.java.lang.System.getProperty(
                "java.class.path"), "class path").result(600)
            owner.submit(lambda spark, job: exercise(spark), "class-data warm-up").result(600)
        finally:
            owner.close(600)
            rc = _exit_jvm()
    if rc != 0:
        return f"the JVM exited with {rc}"
    if not tmp.exists() or tmp.stat().st_size < cds.MIN_SIZE:
        return "no archive written"
    return cds.accepted(tmp, classpath, driver_options)


def exercise(spark) -> int:
    """Load what real jobs load: a tiny build of one message in both plans (the fused plan's RDD tasks; the
    dataframe plan's data source, Arrow and Spark SQL, which hydrate and export use too; the warm-up itself runs
    only the fused plan in local mode), and a small SQL aggregation (the planner and code generation)."""
    from core.pipeline.spark_encode import PLANS, warm_up_build
    n = warm_up_build(spark, PLANS)
    spark.range(1000).selectExpr("id % 7 AS k", "id AS v").groupBy("k").agg({"v": "sum"}).orderBy("k").collect()
    return n


def _exit_jvm(timeout: float = 900) -> int | None:
    """Stop this process's JVM and wait for it (the archive is written at its exit: ~15 s of CPU)."""
    from pyspark import SparkContext
    from core.pipeline import jvm
    proc = getattr(SparkContext._gateway, "proc", None)
    jvm.shutdown_jvm(timeout)
    return None if proc is None else proc.returncode


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m core.pipeline.cds_make",
                                 description="make the Spark driver's class-data archive (normally started by the "
                                             "session after its warm-up)")
    ap.add_argument("--path", help="where the session wants it (only checked against the key)")
    ap.add_argument("--key", help="the session's key: nothing is made when this process finds another")
    ap.add_argument("--options", default=None, help="the driver's Java options (default: SparkSettings')")
    ap.add_argument("--memory", default="2g")
    ap.add_argument("--wait", action="store_true", help="wait for another maker instead of leaving")
    ap.add_argument("--status", action="store_true", help="only say whether a whole archive is there")
    a = ap.parse_args(argv)
    a.cmd = "status" if a.status else "make"
    from core.pipeline.session import SparkSettings
    conf = SparkSettings(driver_memory=a.memory).conf()
    if a.options is not None:
        conf["spark.driver.extraJavaOptions"] = a.options
    path, k, why = cds.state(conf)
    if a.cmd == "status":
        print(f"{path or '-'}: {why or 'ready'}")
        return 0
    if a.path and a.key and a.key != k:
        print(f"key changed since the session asked ({a.key} -> {k}): not made")
        return 1
    if path is None:
        print(why)
        return 1
    out = make_archive(path, k, conf["spark.driver.extraJavaOptions"], a.memory, wait=a.wait)
    print(f"{path}: {out}")
    return 0 if out in ("made", "present", "busy") else 1


if __name__ == "__main__":
    sys.exit(main())
