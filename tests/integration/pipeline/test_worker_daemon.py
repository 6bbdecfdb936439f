"""Local mode's Python workers start warm (core/pipeline/worker_daemon.py), on the tests' one SparkSession: each
task's worker is forked from a daemon that had already imported pyspark's worker (from the installed package, not
Spark's zip) and our task modules, and the workers are reused by the next job."""
from __future__ import annotations

import pytest

from core.pipeline import source
from core.pipeline.session import WORKER_DAEMON

pytestmark = pytest.mark.spark


def _rdd_workers(spark, tasks: int) -> list[tuple]:
    def state(_rows):
        """Runs in a task; pickled by value (a nested function), so it imports nothing of ours itself."""
        import os
        import sys
        main = sys.modules["__main__"]
        spec = getattr(main, "__spec__", None)
        yield (os.getpid(), spec.name if spec else None, list(getattr(main, "PRELOADED", ())),
               sys.modules["pyspark"].__file__, "core.pipeline.source" in sys.modules)

    return spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(state).collect()


def test_task_workers_fork_from_the_warm_daemon_and_are_reused(spark_owner):
    cores = spark_owner.submit(lambda spark, j: spark.sparkContext.defaultParallelism).result(300)
    first = spark_owner.submit(lambda spark, j: _rdd_workers(spark, cores), "worker state").result(300)
    for pid, daemon, preloaded, pyspark_file, loaded in first:
        assert daemon == WORKER_DAEMON                          # pyspark's own daemon has no such module
        assert {"pyspark.worker", "core.pipeline.source", "core.pipeline.hydrate"} <= set(preloaded)
        assert loaded                                           # before the task's own code ran
        assert ".zip" not in pyspark_file and pyspark_file.endswith("__init__.py")
        assert "pandas" not in preloaded                        # an RDD job's daemon: no Spark SQL runner
    again = spark_owner.submit(lambda spark, j: _rdd_workers(spark, cores), "worker state again").result(300)
    assert {r[0] for r in again} <= {r[0] for r in first}      # the same processes ran the next job's tasks


def test_spark_sql_workers_start_warm_too(spark_owner):
    """The data sources' reads and mapInArrow run in Spark SQL's own Python runner: its daemon loads pandas too."""

    def job(spark, j):
        import pyarrow as pa

        def state(batches):
            import sys
            for _ in batches:
                pass
            main = sys.modules["__main__"]
            spec = getattr(main, "__spec__", None)
            yield pa.RecordBatch.from_pydict({"daemon": [spec.name if spec else ""],
                                              "preloaded": [",".join(getattr(main, "PRELOADED", ()))]})

        return spark.range(2, numPartitions=2).mapInArrow(state, "daemon STRING, preloaded STRING").collect()

    rows = spark_owner.submit(job, "sql worker state").result(300)
    assert rows and all(r.daemon == WORKER_DAEMON for r in rows)
    assert all({"pandas", "pyspark.worker", "core.pipeline.source"} <= set(r.preloaded.split(",")) for r in rows)


def test_the_data_sources_are_registered_by_the_first_read(spark_owner, tmp_path):
    """Not at the session's start (that costs a Python worker in a session that reads no data source): the first
    read registers them, once per session."""
    from .helpers import T0, TOPICS, WEEK, msg, write_store
    db = write_store(tmp_path / "db.sqlite", [msg(T0 + i, bytes([i]) * 10) for i in range(5)])

    def job(spark, j):
        df = source.read_messages(spark, str(db), TOPICS, [(T0, T0 + WEEK)])
        registered, sessions = spark in source._registered, len(source._registered)
        source.read_messages(spark, str(db), TOPICS, [(T0, T0 + WEEK)])
        return registered, len(source._registered) - sessions, df.count()

    registered, added, count = spark_owner.submit(job, "read messages").result(300)
    assert registered and added == 0 and count == 5
