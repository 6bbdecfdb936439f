"""Spark's Python daemon for local mode (`spark.python.daemon.module`): pyspark's own daemon, started warm.

Spark starts one daemon per kind of Python task (`python -m <daemon module> pyspark.worker`) and the daemon forks a
worker per concurrent task (reused for later tasks, `spark.python.worker.reuse`). pyspark's daemon imports almost
nothing before it forks, so every worker imported pyspark's worker, pyarrow, pandas and our task modules itself:
~0.6 s of CPU per fork, and under `make test`'s coverage hook 2-4x that (slipcover instruments each module again in
each fork). Two more costs came from the path Spark gives the daemon: `$SPARK_HOME/python/lib/pyspark.zip` and
py4j's zip come first, and a zip holds no byte code, so the daemon and each worker compiled pyspark's modules from
source (0.55 s per daemon where the installed package imports in 0.14 s).

This daemon (1) puts those two zips after the installed pyspark and py4j when they are the same distribution (the
zips inside the pip package), (2) imports the worker and our task modules once, then freezes them out of the
garbage collector (each reused worker runs gc.collect() after every task), and (3) runs pyspark's daemon, whose
workers fork from it with everything loaded. pyspark's daemon imports the worker after the fork because pandas and
pyarrow start native threads (OpenBLAS, jemalloc's background thread) and a fork copies only the forking thread;
those libraries register at-fork handlers for their own threads, which is what the Python world's fork-based pools
rely on too.

Local mode only (session.py): on a cluster the executors get our code as a zip through `addPyFile`, which a task's
worker puts on its path when the task arrives; the daemon starts before that, so it could not import this module.
Anything that fails to import here is left for the worker to import (and report) as before.
"""
from __future__ import annotations

import os
import sys

# What a worker imports for our tasks (the fused build's task, hydrate, export; `source` pulls in the encoder,
# pyarrow and pyspark's data source API). Missing ones are skipped.
TASK_MODULES = ("pyspark.worker", "core.pipeline.source", "core.pipeline.hydrate", "core.pipeline.export_rows")
# A Spark SQL Python runner (Arrow batches: the data sources' reads, mapInArrow) also imports pandas (pyspark's Arrow
# serializers) and the data source read's helpers; its daemon is told apart by the environment Spark SQL gives it.
SQL_MODULES = ("pandas", "pyspark.sql.worker.plan_data_source_read")
SQL_MARK = "SPARK_SIMPLIFIED_TRACEBACK"

PRELOADED: tuple[str, ...] = ()   # what this daemon imported before forking (read by the tests, in a worker)


def bundled_zip(entry: str, path: list[str]) -> bool:
    """Whether a `sys.path` entry is the pyspark.zip or py4j-*-src.zip that the pip package of pyspark carries
    (`<site>/pyspark/python/lib/`), with that package and an installed py4j of the zip's version importable from
    `<site>`, also on `path`: then both zips hold the very code the installed packages hold, byte code included."""
    lib, name = os.path.split(entry)
    if os.path.basename(lib) != "lib" or os.path.basename(os.path.dirname(lib)) != "python":
        return False
    package = os.path.dirname(os.path.dirname(lib))
    site = os.path.dirname(package)
    if os.path.basename(package) != "pyspark" or not os.path.isfile(os.path.join(package, "__init__.py")):
        return False
    if not any(os.path.abspath(p or os.curdir) == os.path.abspath(site) for p in path):
        return False
    if name == "pyspark.zip":
        return True
    if name.startswith("py4j-") and name.endswith("-src.zip"):
        version = name[len("py4j-"):-len("-src.zip")]
        return os.path.isdir(os.path.join(site, "py4j")) and os.path.isdir(
            os.path.join(site, f"py4j-{version}.dist-info"))
    return False


def prefer_installed_pyspark(path: list[str] | None = None) -> list[str]:
    """Move the bundled zips (`bundled_zip`) to the end of `path` (default sys.path), in place; returns them."""
    path = sys.path if path is None else path
    zips = [p for p in path if bundled_zip(p, path)]
    for p in zips:
        path.remove(p)
        path.append(p)
    return zips


def modules_for(environ) -> tuple[str, ...]:
    return TASK_MODULES + (SQL_MODULES if environ.get(SQL_MARK) else ())


def preload(modules) -> tuple[str, ...]:
    """Import each module; returns those that imported. A failure is left to the worker that needs the module."""
    import importlib
    done = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the worker imports it again and reports the error in its task
            continue
        done.append(name)
    return tuple(done)


def main() -> None:
    global PRELOADED
    prefer_installed_pyspark()
    PRELOADED = preload(modules_for(os.environ))
    import gc
    gc.collect()
    gc.freeze()      # the loaded modules' objects stay out of every worker's collections
    from pyspark import daemon
    daemon.manager()


if __name__ == "__main__":
    main()
