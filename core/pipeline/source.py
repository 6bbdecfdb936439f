"""Spark Python Data Source over status-go's `waku_messages` SQLite table (no JDBC jar needed).

Why a Python data source rather than JDBC (see docs/PIPELINE.md): the only reachable JDBC driver is Debian's
sqlite-jdbc jar (an extra system dependency and a classpath to manage), it returns INTEGER as 32-bit unless told
otherwise, and it would move payload blobs through the JVM's JDBC path; the Python source needs nothing beyond
pyspark, reads with the same `sqlite3` module and SQL as the reference path, and hands rows to Spark as Arrow
batches. One input partition = one 7-day window [lo, hi), because chunking walks a window's messages in order.

The `dataframe` build plan reads the messages through `archivist_waku_messages` and sorts and encodes them in
Spark. The `fused` plan does not use a data source: its tasks (`store_archive_rows`, one RDD partition per window)
read each window ordered by SQLite and encode it in the same Python worker, so messages never leave it and only
the spooled archives' paths cross the JVM (a Python data source job is planned through a Python worker on the
driver first: the same 200k-message Spark part took 5.0-6.1 s as a data source, 3.7 s as an RDD job, load 9). `archivist_stage_archives` is the fused
plan over a stage folder (cluster mode with --stage-dir).

Options: `path` (SQLite file, readable by the executors), `topics` (comma-separated 0x<8 hex>), `windows`
(JSON list of [lo, hi]), `cap` (messages whose len(payload)+len(sig) exceeds it are dropped in SQL, as status-go
drops them; this also keeps >30 MB blobs out of Spark altogether). The stage source also takes `transform`
(base64 of a cloudpickled bytes->bytes function) and `hold` (test seam, "host:port").
"""
from __future__ import annotations

import json
import sqlite3
import threading
import weakref
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from core.archive.constants import MAX_ARCHIVE_PAYLOAD
from core.pipeline.encode import ENCODED_SCHEMA, encode_staged_window, encode_store_window, encoded_batch, hold
from core.hextext import from_hex

SOURCE_NAME = "archivist_waku_messages"
SCHEMA = ("window INT, timestamp BIGINT, hash BINARY, sig BINARY, topic BINARY, payload BINARY, padding BINARY, "
          "third_party_id STRING")
BATCH_ROWS = 4096
BATCH_BYTES = 16 << 20


# Error rows of an executor that cannot see the stage folder or open the store: "<code>\t<host>\t<path>".
STAGE_UNSEEN, STORE_UNSEEN, DATA_UNSEEN = "stage-unseen", "store-unseen", "data-unseen"


def unseen_error(code: str, path: str) -> str:
    import socket
    return f"{code}\t{socket.gethostname()}\t{path}"


def unseen_row(pa, partition: "WindowPartition", code: str, path: str):
    return encoded_batch(pa, (partition.window, 0, partition.lo, partition.hi, 0, b"", unseen_error(code, path),
                              None, None))


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
            cols: list[list] = [[] for _ in range(7)]
            size = 0
            for m in window_messages(con, self.topics, partition.lo, partition.hi, self.cap, ordered=False):
                for col, v in zip(cols, (m.timestamp, m.hash, m.sig, m.topic, m.payload, m.padding,
                                         m.third_party_id)):
                    col.append(v)
                size += len(m.payload) + len(m.sig)
                if len(cols[0]) >= BATCH_ROWS or size >= BATCH_BYTES:
                    yield _batch(pa, partition.window, cols)
                    cols, size = [[] for _ in range(7)], 0
            if cols[0]:
                yield _batch(pa, partition.window, cols)
        finally:
            con.close()


def store_archive_rows(path: str, topics: Sequence[bytes], windows: Sequence[tuple[int, int, int]], cap: int,
                       transform=None, spool_dir: str | None = None, hold_at: tuple[str, int] | None = None
                       ) -> Iterator[tuple]:
    """The fused plan's task (core/pipeline/spark_encode.py): ENCODED_SCHEMA tuples of each (window, lo, hi),
    read straight from the store in archive order and encoded by the reference build's bulk encoder
    (encode_store_window); with `spool_dir` the archives go to files there and only their paths travel back.
    A store this executor cannot open gives one error row (STORE_UNSEEN, its host and the path)."""
    hold(hold_at, windows[0][0] if windows else None)
    if not windows:
        return
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.OperationalError:   # not at this path on this machine: one line on the driver
        window, lo, hi = windows[0]
        yield (window, 0, lo, hi, 0, b"", unseen_error(STORE_UNSEEN, path), None, None)
        return
    import gc
    collecting = gc.isenabled()
    gc.disable()   # as build_archives: the batches hold many small objects, none in a cycle
    try:
        for window, lo, hi in windows:
            yield from encode_store_window(window, con, lo, hi, topics, cap, transform, spool_dir)
    finally:
        con.close()
        if collecting:
            gc.enable()


STAGE_SOURCE_NAME = "archivist_stage_archives"
STAGE_COLUMNS = ("timestamp", "hash", "sig", "topic", "payload", "padding", "third_party_id")
STAGE_SCHEMA = pa.schema([("timestamp", pa.int64()), ("hash", pa.binary()), ("sig", pa.binary()),
                          ("topic", pa.binary()), ("payload", pa.binary()), ("padding", pa.binary()),
                          ("third_party_id", pa.string())])


def stage_window_file(stage: str, window: int) -> str:
    """Where the driver stages window `window` and the executor reads it (core/pipeline/stage.py)."""
    import os
    return os.path.join(stage, "in", f"window={window}", "part.parquet")


class StageArchivesSource(DataSource):
    """The fused plan over the stage folder: options `stage` (the job's <stage-dir>/<app> folder), `topics`,
    `windows`, `cap`, `transform`, `hold`. Executors read only the stage, never the SQLite store."""

    @classmethod
    def name(cls) -> str:
        return STAGE_SOURCE_NAME

    def schema(self) -> str:
        return ENCODED_SCHEMA

    def reader(self, schema: StructType) -> "StageArchivesReader":
        return StageArchivesReader(dict(self.options))


class StageArchivesReader(WakuMessagesReader):
    def __init__(self, options: dict):
        super().__init__({**options, "path": options["stage"]})
        self.stage = options["stage"]
        self.topic_bytes = tuple(bytes.fromhex(t[2:]) for t in self.topics)
        self.transform = options.get("transform") or None
        h = options.get("hold") or None
        self.hold = (h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) if h else None

    def _transform(self):
        """The archive transform (encrypted communities) the driver pickled into the options, or None."""
        if not self.transform:
            return None
        import base64
        from pyspark import cloudpickle
        return cloudpickle.loads(base64.b64decode(self.transform))

    def read(self, partition: WindowPartition) -> Iterator:
        import os
        import pyarrow as pa
        hold(self.hold)
        if not os.path.isdir(os.path.join(self.stage, "in")):
            yield unseen_row(pa, partition, STAGE_UNSEEN, self.stage)
            return
        transform = self._transform()
        for row in encode_staged_window(partition.window, partition.lo, partition.hi, self.topic_bytes,
                                        stage_window_file(self.stage, partition.window), self.cap, transform,
                                        os.path.join(self.stage, "out")):
            yield encoded_batch(pa, row)


def window_messages(con: sqlite3.Connection, topics: Sequence[str], lo: int, hi: int, cap: int, *,
                    ordered: bool = True) -> Iterator:
    """The one query of the Spark build (both plans and the stage): one window's messages of `topics` (0x-hex
    text, as stored), those over `cap` dropped in SQL as status-go drops them, in archive order
    (timestamp, hash) unless `ordered` is False. Yields core.archive.codec.ArchiveMessage."""
    from core.archive.codec import ArchiveMessage
    marks = ",".join("?" * len(topics))
    cur = con.execute(
        f"SELECT sig, timestamp, topic, payload, padding, hash, third_party_id FROM waku_messages "
        f"WHERE timestamp >= ? AND timestamp < ? AND topic IN ({marks}) "
        f"AND length(payload) + length(sig) <= ?" + (" ORDER BY timestamp, hash" if ordered else ""),
        (lo, hi, *topics, cap))
    for sig, ts, topic, payload, padding, h, tpid in cur:
        yield ArchiveMessage(sig, ts, from_hex(topic), payload, padding or b"", from_hex(h), tpid or "")


def _batch(pa, window: int, cols: list[list]):
    n = len(cols[0])
    return pa.RecordBatch.from_arrays(
        [pa.array([window] * n, pa.int32()), pa.array(cols[0], pa.int64()), pa.array(cols[1], pa.binary()),
         pa.array(cols[2], pa.binary()), pa.array(cols[3], pa.binary()), pa.array(cols[4], pa.binary()),
         pa.array(cols[5], pa.binary()), pa.array(cols[6], pa.string())],
        names=["window", "timestamp", "hash", "sig", "topic", "payload", "padding", "third_party_id"])


_registered: "weakref.WeakSet" = weakref.WeakSet()   # sessions our sources are registered in
_register_lock = threading.Lock()


def register_sources(spark) -> None:
    """Register both sources in `spark`, once per session, when a job first reads one (read_messages,
    read_stage_archives), not when the session starts: Spark's first registration in a JVM looks up the installed
    Python data sources in a Python worker of its own (a daemon and a fork, ~0.8 s of CPU), which a session that
    only runs the fused plan, hydrate and export never needs."""
    with _register_lock:
        if spark in _registered:
            return
        spark.dataSource.register(WakuMessagesSource)
        spark.dataSource.register(StageArchivesSource)
        _registered.add(spark)


def read_stage_archives(spark, stage: str, topics, windows, cap: int = MAX_ARCHIVE_PAYLOAD, transform=None,
                        hold_at: tuple[str, int] | None = None):
    """DataFrame of encoded archives made from the staged windows (one task per window); archives are written to
    `<stage>/out` and rows carry their paths."""
    import base64
    from pyspark import cloudpickle
    register_sources(spark)
    r = (spark.read.format(STAGE_SOURCE_NAME)
         .option("stage", str(stage))
         .option("topics", ",".join("0x" + t.hex() for t in topics))
         .option("windows", json.dumps([list(w) for w in windows]))
         .option("cap", str(cap)))
    if transform is not None:
        r = r.option("transform", base64.b64encode(cloudpickle.dumps(transform)).decode())
    if hold_at is not None:
        r = r.option("hold", f"{hold_at[0]}:{hold_at[1]}")
    return r.load()


def read_messages(spark, path: str, topics, windows, cap: int = MAX_ARCHIVE_PAYLOAD):
    """DataFrame of the community's messages, one input partition per window."""
    register_sources(spark)
    return (spark.read.format(SOURCE_NAME)
            .option("path", str(path))
            .option("topics", ",".join("0x" + t.hex() for t in topics))
            .option("windows", json.dumps([list(w) for w in windows]))
            .option("cap", str(cap))
            .load())
