"""Smoke probe for the installed package: a PySpark job whose Python UDF runs the app's own code in Spark's
Python workers. Run with the packaged interpreter after sourcing /opt/archivist/archivist-env.sh:

    . /opt/archivist/archivist-env.sh && "$ARCHIVIST_PYTHON" spark_probe.py messages.sqlite

It recomputes keccak256 of every message payload of a waku_messages database in the workers
(core.archive.codec.keccak256) and compares with the driver, and reports which interpreter the workers ran.
Exits non-zero on any mismatch; prints "spark-probe OK ..." on success.
"""
from __future__ import annotations

import os
import sqlite3
import sys
import time


def main(db: str) -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from pyspark.sql.types import StringType

    from core.archive.codec import keccak256

    rows = sqlite3.connect(db).execute("SELECT hash, payload FROM waku_messages ORDER BY hash").fetchall()
    t0 = time.monotonic()
    spark = (SparkSession.builder.master("local[2]").appName("archivist-install-smoke")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.createDataFrame([(h, bytes(p)) for h, p in rows], "hash string, payload binary").repartition(4)

        @udf(StringType())
        def worker_keccak(payload):  # runs in a Spark Python worker
            from core.archive.codec import keccak256 as k
            return k(payload).hex()

        @udf(StringType())
        def worker_python(_):
            import core
            return f"{sys.executable} core={core.__version__}"

        out = df.select("hash", worker_keccak("payload").alias("k"), worker_python("hash").alias("py")).collect()
        pythons = sorted({r.py for r in out})
    finally:
        spark.stop()
    want = {h: keccak256(bytes(p)).hex() for h, p in rows}
    got = {r.hash: r.k for r in out}
    if got != want:
        print(f"spark-probe FAIL: {sum(got.get(h) != k for h, k in want.items())} payload digests differ")
        return 1
    # SPARK_PROBE_PYTHON: the portable file's PYSPARK_PYTHON is a wrapper that execs this interpreter
    expected = os.environ.get("SPARK_PROBE_PYTHON") or os.environ.get("PYSPARK_PYTHON", sys.executable)
    if any(not p.startswith(expected + " ") for p in pythons):
        print(f"spark-probe FAIL: workers ran {pythons}, expected {expected}")
        return 1
    print(f"spark-probe OK: {len(out)} rows hashed in Spark workers running {pythons[0]} "
          f"(driver {sys.executable}, JAVA_HOME={os.environ.get('JAVA_HOME')}) in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
