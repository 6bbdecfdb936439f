"""The Spark build job: waku_messages -> 7-day windows -> ordered -> 30 MB chunks -> archives encoded in executors.

The driver then hands the ordered archive bytes to the same writer as the reference path
(core.archive.folder.ArchiveFolder.append, then core.archive.build.finish_build), so data, index and torrent are
byte-identical to core.archive.build.build_archives. The folder is opened by the same ArchiveFolder, so the index
is checked before it is trusted (a damaged index is rebuilt from data or refused with CorruptFolder, never used to
cut data). The driver appends each window as soon as the executors have spooled it, while the job still runs
(core/pipeline/stream.py), but the index is written only once the whole job has ended and its rows agree with what
was appended; until then the bytes are an append under way: a cancel, a failed job or a disk fault is undone by the
folder's append (data cut back, index untouched), and a kill -9 is cut off by the next open of the folder, so the
folder is left exactly as it was.

The torrent's piece hashes are not read back from `data`: each archive fills whole pieces, so the executors hash
each new archive's pieces as they encode it (encode.encoded_rows), and a driver thread hashes the archives already
in `data` meanwhile (`OldPieces`); finish_build then hashes only the index.
"""
from __future__ import annotations

import functools
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Sequence

from core.archive.build import ArchiveTransform, BuildResult, community_folder, finish_build, plan_build
from core.archive.constants import MAX_ARCHIVE_PAYLOAD, PARTITION_SECONDS
from core.archive.diskio import disk_error
from core.archive.folder import ArchiveFolder
from core.archive.torrent import data_piece_hashes
from core.pipeline.session import JobCancelled, SparkJob, SparkOwner
from core.pipeline.source import STAGE_UNSEEN, STORE_UNSEEN
from core.pipeline.spark_encode import PipelineError, encode_on_spark
from core.pipeline.stage import Stage, StageUnseen, stage_windows, unseen_message
from core.pipeline.stream import StreamingAppend, WindowFeed
from core.storage import waku_messages


def build_job(spark, job: SparkJob | None, db_path: Path | str, community_id: str, topics: Sequence[bytes],
              data_dir: Path | str, torrent_dir: Path | str, *, start: int | None = None, end: int | None = None,
              trackers: Sequence[str] = (), transform: ArchiveTransform | None = None,
              cap: int = MAX_ARCHIVE_PAYLOAD, interval: int = PARTITION_SECONDS,
              now: Callable[[], float] = time.time, hold: tuple[str, int] | None = None,
              plan: str = "fused", index_codec=None, stage_dir: Path | str | None = None) -> BuildResult:
    """Same contract as core.archive.build.build_archives, with the reading, ordering, chunking and encoding on
    Spark. Runs on the Spark owner thread (see `submit_build`).

    `stage_dir` (default: the owner's `SparkSettings.stage_dir`) is used when the master is not local: the driver
    stages the windows there and executors never open `db_path` (core/pipeline/stage.py). Local mode ignores it."""
    end = int(now()) if end is None else end
    db_path = str(Path(db_path).resolve())
    if stage_dir is None and job is not None:
        stage_dir = job.owner.settings.stage_dir
    staged = stage_dir is not None and not spark.sparkContext.master.startswith("local")
    folder = ArchiveFolder(community_folder(data_dir, community_id), create=True, index_codec=index_codec)
    stage: Stage | None = None
    con = waku_messages.connect(db_path, create=False)
    try:  # one indexed MIN() on the driver; the bulk read happens in the executors (or in stage_windows)
        oldest = waku_messages.oldest_timestamp(con, topics)
        windows = plan_build(folder, oldest, end, start, interval).windows
        if staged and windows and topics:
            stage = Stage(stage_dir, spark.sparkContext.applicationId).create()
            try:
                stage_windows(con, topics, windows, cap, stage, job.check_cancelled if job is not None else None)
            except BaseException:
                stage.remove()
                raise
    finally:
        con.close()
    if stage is not None:
        spool, remove = stage.out, stage.remove
    else:
        spool = Path(data_dir) / f".spark-spool-{community_id}-{uuid.uuid4().hex[:12]}"
        try:
            spool.mkdir()
        except OSError as e:
            raise disk_error(e, spool, "creating the spool folder", "nothing was written") from None
        remove = functools.partial(_remove_spool, spool)
    old = OldPieces(folder.data_path, folder.described_length if windows and topics else 0)
    check = job.check_cancelled if job is not None else None
    feed: WindowFeed | None = None
    try:
        try:
            if windows and topics:   # the append runs beside the job, window by window (core/pipeline/stream.py)
                feed = WindowFeed(spool.resolve(), windows, topics, check=check, **_notify_address(spark))
                appender = StreamingAppend(folder, feed, on_error=_stopper(spark, job))
            try:
                produced = encode_on_spark(spark, db_path, topics, windows, cap=cap, transform=transform,
                                           hold=hold, plan=plan, spool_dir=spool.resolve(),
                                           stage=stage.path if stage is not None else None, check=check)
            except BaseException:
                if feed is not None:
                    feed.fail()
                    appender.join()   # it undid what it appended
                    if appender.error is not None and not isinstance(appender.error, JobCancelled):
                        raise appender.error from None   # a disk fault stopped the job: report the fault
                raise
            if feed is None:
                new_ids = []
            else:
                feed.finish(produced)
                new_ids = appender.result()
        except PipelineError as e:
            line = unseen_message(str(e)) if e.code in (STAGE_UNSEEN, STORE_UNSEEN) else None
            if line is None:
                raise
            raise StageUnseen(line) from None
    except BaseException:
        old.stop()
        raise
    finally:
        if feed is not None:
            feed.close()
        remove()
    new_pieces = produced.pieces() if new_ids else None
    if new_pieces is None:
        old.stop()
    old_pieces = old.result() if new_pieces is not None else None
    data_pieces = None if old_pieces is None else old_pieces + new_pieces   # None: finish_build reads `data`
    return finish_build(folder, community_id, torrent_dir, trackers, new_ids, produced.messages, data_pieces)


class _Stopped(Exception):
    pass


class OldPieces:
    """The piece hashes of the first `length` bytes of `data` (the archives already there), made on a thread while
    Spark encodes the new ones (the append only writes after them). `result()` waits: the hashes, or None if they
    could not be made (finish_build then reads `data` itself and reports any disk error); `stop()` ends the
    thread early (a failed or cancelled build)."""

    def __init__(self, path: Path, length: int):
        self._stop = threading.Event()
        self._pieces: bytes | None = b"" if length == 0 else None
        self._thread: threading.Thread | None = None
        if length:
            self._thread = threading.Thread(target=self._run, args=(path, length), name="archivist-old-pieces",
                                            daemon=True)
            self._thread.start()

    def _run(self, path: Path, length: int) -> None:
        def check() -> None:
            if self._stop.is_set():
                raise _Stopped
        try:
            self._pieces = data_piece_hashes(path, length, check)
        except (OSError, ValueError, _Stopped):
            self._pieces = None

    def stop(self) -> None:
        self._stop.set()

    def result(self) -> bytes | None:
        if self._thread is not None:
            self._thread.join()
        return self._pieces


def _notify_address(spark) -> dict[str, str]:
    """Where the executors wake the driver's WindowFeed: loopback in local mode, else the driver's own address
    (`spark.driver.host`, bound at `spark.driver.bindAddress` when that differs)."""
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return {"host": "127.0.0.1"}
    conf = sc.getConf()
    host = conf.get("spark.driver.host", "127.0.0.1")
    return {"host": host, "bind": conf.get("spark.driver.bindAddress", host)}


def _stopper(spark, job: SparkJob | None) -> Callable[[], None] | None:
    """Cancels the build's Spark job once its append has failed (nothing the job makes can be used any more)."""
    if job is None:
        return None
    return lambda: spark.sparkContext.cancelJobGroup(job.group)


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
