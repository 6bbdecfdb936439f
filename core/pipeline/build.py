"""The Spark build job: waku_messages -> 7-day windows -> ordered -> 30 MB chunks -> archives encoded in executors.

The driver then hands the ordered archive bytes to the same writer as the reference path
(core.archive.folder.ArchiveFolder.append, then core.archive.build.finish_build), so data, index and torrent are
byte-identical to core.archive.build.build_archives. The folder is opened by the same ArchiveFolder, so the index
is checked before it is trusted (a damaged index is rebuilt from data or refused with CorruptFolder, never used to
cut data). Nothing is written until Spark has produced every archive: a cancelled or failed job, or a disk fault
while appending, leaves the folder exactly as it was.
"""
from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator, Sequence

from core.archive.build import ArchiveTransform, BuildResult, community_folder, finish_build, plan_build
from core.archive.constants import MAX_ARCHIVE_PAYLOAD, PARTITION_SECONDS
from core.archive.diskio import disk_error
from core.archive.errors import ArchiveError
from core.archive.folder import ArchiveFolder, NewArchive
from core.pipeline.session import SparkJob, SparkOwner
from core.pipeline.encode import ENCODED_SCHEMA, make_encoder
from core.pipeline.source import read_archives, read_messages
from core.storage import waku_messages

PLANS = ("fused", "dataframe")


class PipelineError(ArchiveError):
    code = "pipeline-error"


class EncodedArchives:
    """The job's archives in (window, chunk) order, as `ArchiveFolder.append` wants them. Spooled ones are read
    from their file one at a time while appending, so the driver never holds more than one archive."""

    def __init__(self, rows: list, topics: Sequence[bytes]):
        self.rows = rows
        self.topics = tuple(topics)
        self.messages = sum(r["messages"] for r in rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[NewArchive]:
        for r in self.rows:
            raw = Path(r["spool"]).read_bytes() if r["spool"] else bytes(r["raw"])
            yield NewArchive(r["start"], r["end"], self.topics, raw)


def encode_on_spark(spark, db_path: str, topics: Sequence[bytes], windows: Sequence[tuple[int, int]], *,
                    cap: int = MAX_ARCHIVE_PAYLOAD, transform: ArchiveTransform | None = None,
                    hold: tuple[str, int] | None = None, plan: str = "fused",
                    spool_dir: Path | str | None = None) -> EncodedArchives:
    """Run the Spark part; the archives come back in archive order (window, then chunk).

    plan "fused": the archives data source reads each window ordered by SQLite and chunks and encodes it in the same
    executor task (messages never cross the JVM). plan "dataframe": messages become a DataFrame, Spark sorts each
    window (sortWithinPartitions) and mapInArrow chunks and encodes. Both give the same bytes.
    With `spool_dir` (an existing folder the executors can write) archives are handed over as files: collecting
    hundreds of MB of archive cells exhausts the 2 GB driver heap (measured at 1M messages)."""
    if plan not in PLANS:
        raise ValueError(f"unknown build plan {plan!r} (choose from {PLANS})")
    if not windows or not topics:
        return EncodedArchives([], topics)
    spool = str(spool_dir) if spool_dir is not None else None
    if plan == "fused":
        encoded = read_archives(spark, db_path, topics, windows, cap, transform, hold, spool)
    else:
        encoded = (read_messages(spark, db_path, topics, windows, cap)
                   .sortWithinPartitions("window", "timestamp", "hash")
                   .mapInArrow(make_encoder(windows, topics, cap, transform, hold, spool), ENCODED_SCHEMA))
    rows = sorted(encoded.collect(), key=lambda r: (r["window"], r["chunk"]))
    for r in rows:
        if r["error"]:
            raise PipelineError(f"encoding window [{r['start']}, {r['end']}) chunk {r['chunk']} failed: {r['error']}",
                                code="encode-failed")
    return EncodedArchives(rows, topics)


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
        spool = Path(d) / "spool"
        spool.mkdir()
        return sum(len(encode_on_spark(spark, db, [b"warm"], [(0, 100)], plan=p, spool_dir=spool)) for p in PLANS)


def build_job(spark, job: SparkJob | None, db_path: Path | str, community_id: str, topics: Sequence[bytes],
              data_dir: Path | str, torrent_dir: Path | str, *, start: int | None = None, end: int | None = None,
              trackers: Sequence[str] = (), transform: ArchiveTransform | None = None,
              cap: int = MAX_ARCHIVE_PAYLOAD, interval: int = PARTITION_SECONDS,
              now: Callable[[], float] = time.time, hold: tuple[str, int] | None = None,
              plan: str = "fused", index_codec=None) -> BuildResult:
    """Same contract as core.archive.build.build_archives, with the reading, ordering, chunking and encoding on
    Spark. Runs on the Spark owner thread (see `submit_build`)."""
    end = int(now()) if end is None else end
    db_path = str(Path(db_path).resolve())
    folder = ArchiveFolder(community_folder(data_dir, community_id), create=True, index_codec=index_codec)
    con = waku_messages.connect(db_path, create=False)
    try:  # one indexed MIN() on the driver; the bulk read happens in the executors
        oldest = waku_messages.oldest_timestamp(con, topics)
    finally:
        con.close()
    windows = plan_build(folder, oldest, end, start, interval).windows
    spool = Path(data_dir) / f".spark-spool-{community_id}-{uuid.uuid4().hex[:12]}"
    try:
        spool.mkdir()
    except OSError as e:
        raise disk_error(e, spool, "creating the spool folder", "nothing was written") from None
    try:
        produced = encode_on_spark(spark, db_path, topics, windows, cap=cap, transform=transform, hold=hold,
                                   plan=plan, spool_dir=spool.resolve())
        if job is not None:
            job.check_cancelled()  # last point where a cancel still leaves the folder untouched
        new_ids = folder.append(produced)
    finally:
        _remove_spool(spool)
    return finish_build(folder, community_id, torrent_dir, trackers, new_ids, produced.messages)


def _remove_spool(spool: Path) -> None:
    """Remove the spool folder; a task killed by a cancel may still be finishing a file, so try twice."""
    for _ in range(2):
        shutil.rmtree(spool, ignore_errors=True)
        if not spool.exists():
            return


def submit_build(owner: SparkOwner, db_path: Path | str, community_id: str, topics: Sequence[bytes],
                 data_dir: Path | str, torrent_dir: Path | str, **kw) -> SparkJob:
    """Queue a build on the owner thread; returns a SparkJob (progress(), cancel(), result())."""
    return owner.submit(lambda spark, job: build_job(spark, job, db_path, community_id, topics, data_dir,
                                                     torrent_dir, **kw), f"build {community_id[:12]}")
