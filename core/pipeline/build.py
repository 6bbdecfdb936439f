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
from typing import Callable, Sequence

from core.archive.build import ArchiveTransform, BuildResult, community_folder, finish_build, plan_build
from core.archive.constants import MAX_ARCHIVE_PAYLOAD, PARTITION_SECONDS
from core.archive.diskio import disk_error
from core.archive.folder import ArchiveFolder
from core.pipeline.session import SparkJob, SparkOwner
from core.pipeline.spark_encode import encode_on_spark
from core.storage import waku_messages


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
