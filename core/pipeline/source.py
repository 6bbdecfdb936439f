"""Spark Python Data Source over status-go's `waku_messages` SQLite table (no JDBC jar needed).

Why a Python data source rather than JDBC (see docs/PIPELINE.md): the only reachable JDBC driver is Debian's
sqlite-jdbc jar (an extra system dependency and a classpath to manage), it returns INTEGER as 32-bit unless told
otherwise, and it would move payload blobs through the JVM's JDBC path; the Python source needs nothing beyond
pyspark, reads with the same `sqlite3` module and SQL as the reference path, and hands rows to Spark as Arrow
batches. One input partition = one 7-day window [lo, hi), because chunking walks a window's messages in order.

Options: `path` (SQLite file, readable by the executors), `topics` (comma-separated 0x<8 hex>), `windows`
(JSON list of [lo, hi]), `cap` (messages whose len(payload)+len(sig) exceeds it are dropped in SQL, as status-go
drops them; this also keeps >30 MB blobs out of Spark altogether).
"""
from __future__ import annotations

import json
import sqlite3
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from core.archive.constants import MAX_ARCHIVE_PAYLOAD

SOURCE_NAME = "archivist_waku_messages"
SCHEMA = ("window INT, timestamp BIGINT, hash BINARY, sig BINARY, topic BINARY, payload BINARY, padding BINARY, "
          "third_party_id STRING")
BATCH_ROWS = 4096
BATCH_BYTES = 16 << 20


class WindowPartition(InputPartition):
    def __init__(self, window: int, lo: int, hi: int):
        super().__init__((window, lo, hi))
        self.window, self.lo, self.hi = window, lo, hi


class WakuMessagesSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: StructType) -> "WakuMessagesReader":
        return WakuMessagesReader(dict(self.options))


class WakuMessagesReader(DataSourceReader):
    def __init__(self, options: dict):
        self.path = options["path"]
        self.topics = [t for t in options.get("topics", "").split(",") if t]
        self.windows = [tuple(w) for w in json.loads(options.get("windows", "[]"))]
        self.cap = int(options.get("cap", MAX_ARCHIVE_PAYLOAD))

    def partitions(self) -> list[WindowPartition]:
        return [WindowPartition(i, lo, hi) for i, (lo, hi) in enumerate(self.windows)]

    def read(self, partition: WindowPartition) -> Iterator:
        import pyarrow as pa
        if not self.topics:
            return
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            marks = ",".join("?" * len(self.topics))
            cur = con.execute(
                f"SELECT timestamp, hash, sig, topic, payload, padding, third_party_id FROM waku_messages "
                f"WHERE timestamp >= ? AND timestamp < ? AND topic IN ({marks}) "
                f"AND length(payload) + length(sig) <= ?",
                (partition.lo, partition.hi, *self.topics, self.cap))
            cols: list[list] = [[] for _ in range(7)]
            size = 0
            fromhex = bytes.fromhex
            for ts, h, sig, topic, payload, padding, tpid in cur:
                cols[0].append(ts)
                cols[1].append(fromhex(h[2:] if h[:2] in ("0x", "0X") else h))
                cols[2].append(sig)
                cols[3].append(fromhex(topic[2:] if topic[:2] in ("0x", "0X") else topic))
                cols[4].append(payload)
                cols[5].append(padding or b"")
                cols[6].append(tpid or "")
                size += len(payload) + len(sig)
                if len(cols[0]) >= BATCH_ROWS or size >= BATCH_BYTES:
                    yield _batch(pa, partition.window, cols)
                    cols, size = [[] for _ in range(7)], 0
            if cols[0]:
                yield _batch(pa, partition.window, cols)
        finally:
            con.close()


def _batch(pa, window: int, cols: list[list]):
    n = len(cols[0])
    return pa.RecordBatch.from_arrays(
        [pa.array([window] * n, pa.int32()), pa.array(cols[0], pa.int64()), pa.array(cols[1], pa.binary()),
         pa.array(cols[2], pa.binary()), pa.array(cols[3], pa.binary()), pa.array(cols[4], pa.binary()),
         pa.array(cols[5], pa.binary()), pa.array(cols[6], pa.string())],
        names=["window", "timestamp", "hash", "sig", "topic", "payload", "padding", "third_party_id"])


def register_sources(spark) -> None:
    spark.dataSource.register(WakuMessagesSource)


def read_messages(spark, path: str, topics, windows, cap: int = MAX_ARCHIVE_PAYLOAD):
    """DataFrame of the community's messages, one input partition per window."""
    return (spark.read.format(SOURCE_NAME)
            .option("path", str(path))
            .option("topics", ",".join("0x" + t.hex() for t in topics))
            .option("windows", json.dumps([list(w) for w in windows]))
            .option("cap", str(cap))
            .load())
