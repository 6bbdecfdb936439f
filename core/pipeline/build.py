"""The Spark build job: waku_messages -> 7-day windows -> ordered -> 30 MB chunks -> archives encoded in executors.

The driver then hands the ordered archive bytes to the same writer as the reference path
(core.archive.folder.ArchiveFolder.append, then core.archive.build.finish_build), so data, index and torrent are
byte-identical to core.archive.build.build_archives. Nothing is written until Spark has produced every archive:
a cancelled or failed job leaves the folder exactly as it was.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

from core.archive import codec
from core.archive.build import ArchiveTransform, BuildResult, community_folder, finish_build, plan_build
from core.archive.constants import MAX_ARCHIVE_PAYLOAD, PARTITION_SECONDS
from core.archive.errors import ArchiveError
from core.archive.folder import ArchiveFolder, NewArchive
from core.archive.partition import chunk_messages
from core.pipeline.session import SparkJob, SparkOwner
from core.pipeline.source import read_messages
from core.storage import waku_messages

ENCODED_SCHEMA = "window INT, chunk INT, start BIGINT, end BIGINT, messages BIGINT, raw BINARY, error STRING"


class PipelineError(ArchiveError):
    code = "pipeline-error"


def _hold(address: tuple[str, int] | None) -> None:
    """Test seam: block this task until the test's socket sends a byte or closes (proves cancel mid-job)."""
    if address is None:
        return
    import socket
    with socket.create_connection(address, timeout=120) as s:
        s.recv(1)


def make_encoder(windows: Sequence[tuple[int, int]], topics: Sequence[bytes], cap: int,
                 transform: ArchiveTransform | None, hold: tuple[str, int] | None = None):
    """mapInArrow function: sorted Arrow batches of one window in, one row per encoded archive out."""
    windows = [tuple(w) for w in windows]
    topics = tuple(topics)

    def encode(batches):
        import pyarrow as pa
        from core.archive.codec import ArchiveMessage
        _hold(hold)
        current: int | None = None
        pending: list = []

        def flush(window: int):
            lo, hi = windows[window]
            for i, chunk in enumerate(chunk_messages(pending, cap)):
                try:
                    raw = codec.encode_archive(lo, hi, topics, chunk)
                    if transform is not None:
                        raw = transform(raw)
                    err = None
                except Exception as e:  # noqa: BLE001 - reported with the window by the driver
                    raw, err = b"", f"{type(e).__name__}: {e}"
                yield pa.RecordBatch.from_pylist(
                    [{"window": window, "chunk": i, "start": lo, "end": hi, "messages": len(chunk), "raw": raw,
                      "error": err}], schema=_out_schema(pa))

        # Windows arrive sorted; chunk_messages needs the whole window, so messages are materialised per window
        # (bounded by one window's data, which the reference path also holds).
        for b in batches:
            cols = b.to_pydict()
            for w, ts, h, sig, topic, payload, padding, tpid in zip(
                    cols["window"], cols["timestamp"], cols["hash"], cols["sig"], cols["topic"], cols["payload"],
                    cols["padding"], cols["third_party_id"]):
                if w != current:
                    if current is not None:
                        yield from flush(current)
                    current, pending = w, []
                pending.append(ArchiveMessage(sig, ts, topic, payload, padding, h, tpid))
        if current is not None:
            yield from flush(current)

    return encode


def _out_schema(pa):
    return pa.schema([("window", pa.int32()), ("chunk", pa.int32()), ("start", pa.int64()), ("end", pa.int64()),
                      ("messages", pa.int64()), ("raw", pa.binary()), ("error", pa.string())])


def encode_on_spark(spark, db_path: str, topics: Sequence[bytes], windows: Sequence[tuple[int, int]], *,
                    cap: int = MAX_ARCHIVE_PAYLOAD, transform: ArchiveTransform | None = None,
                    hold: tuple[str, int] | None = None) -> list[tuple[NewArchive, int]]:
    """Run the Spark part: returns (archive, message count) in archive order (window, then chunk)."""
    if not windows or not topics:
        return []
    df = read_messages(spark, db_path, topics, windows, cap)
    encoded = (df.sortWithinPartitions("window", "timestamp", "hash")
               .mapInArrow(make_encoder(windows, topics, cap, transform, hold), ENCODED_SCHEMA))
    rows = sorted(encoded.collect(), key=lambda r: (r["window"], r["chunk"]))
    out = []
    for r in rows:
        if r["error"]:
            raise PipelineError(f"encoding window [{r['start']}, {r['end']}) chunk {r['chunk']} failed: {r['error']}",
                                code="encode-failed")
        out.append((NewArchive(r["start"], r["end"], tuple(topics), bytes(r["raw"])), r["messages"]))
    return out


def warm_up_build(spark) -> int:
    """Read and encode one message from a throw-away store (pays the first-job costs ahead of time)."""
    import tempfile
    from core.archive.codec import ArchiveMessage
    with tempfile.TemporaryDirectory(prefix="archivist-warm-") as d:
        db = str(Path(d) / "warm.sqlite")
        con = waku_messages.connect(db)
        waku_messages.insert_messages(con, [ArchiveMessage(b"\x04", 10, b"warm", b"up", b"", b"\x01")])
        con.commit()
        con.close()
        return len(encode_on_spark(spark, db, [b"warm"], [(0, 100)]))


def build_job(spark, job: SparkJob | None, db_path: Path | str, community_id: str, topics: Sequence[bytes],
              data_dir: Path | str, torrent_dir: Path | str, *, start: int | None = None, end: int | None = None,
              trackers: Sequence[str] = (), transform: ArchiveTransform | None = None,
              cap: int = MAX_ARCHIVE_PAYLOAD, interval: int = PARTITION_SECONDS,
              now: Callable[[], float] = time.time, hold: tuple[str, int] | None = None) -> BuildResult:
    """Same contract as core.archive.build.build_archives, with the reading, ordering, chunking and encoding on
    Spark. Runs on the Spark owner thread (see `submit_build`)."""
    end = int(now()) if end is None else end
    db_path = str(Path(db_path).resolve())
    folder = ArchiveFolder(community_folder(data_dir, community_id), create=True)
    con = waku_messages.connect(db_path, create=False)
    try:  # one indexed MIN() on the driver; the bulk read happens in the executors
        oldest = waku_messages.oldest_timestamp(con, topics)
    finally:
        con.close()
    plan = plan_build(folder, oldest, end, start, interval)
    produced = encode_on_spark(spark, db_path, topics, plan.windows, cap=cap, transform=transform, hold=hold)
    if job is not None:
        job.check_cancelled()  # last point where a cancel still leaves the folder untouched
    new_ids = folder.append([a for a, _ in produced])
    return finish_build(folder, community_id, torrent_dir, trackers, new_ids, sum(n for _, n in produced))


def submit_build(owner: SparkOwner, db_path: Path | str, community_id: str, topics: Sequence[bytes],
                 data_dir: Path | str, torrent_dir: Path | str, **kw) -> SparkJob:
    """Queue a build on the owner thread; returns a SparkJob (progress(), cancel(), result())."""
    return owner.submit(lambda spark, job: build_job(spark, job, db_path, community_id, topics, data_dir,
                                                     torrent_dir, **kw), f"build {community_id[:12]}")
