"""The Spark part of a build: read, order, chunk and encode archives in the executors, and the warm-up job.

Split from core/pipeline/build.py so that core/pipeline/session.py can run the warm-up (`SparkOwner.warm()`)
without importing the build, which imports the session: build -> session -> spark_encode, no circle.
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Callable, Iterator, Sequence

from core.archive.build import ArchiveTransform
from core.archive.constants import MAX_ARCHIVE_PAYLOAD
from core.archive.errors import ArchiveError
from core.archive.folder import NewArchive
from core.pipeline.encode import ENCODED_NAMES, ENCODED_SCHEMA, make_encoder
from core.pipeline.source import STAGE_UNSEEN, STORE_UNSEEN, read_messages, read_stage_archives
from core.storage import waku_messages

PLANS = ("fused", "dataframe")


class PipelineError(ArchiveError):
    code = "pipeline-error"


class EncodedArchives:
    """The job's archives in (window, chunk) order, as `ArchiveFolder.append` wants them; the rows are checked
    when made (an error row raises PipelineError). A spooled archive is handed over as a read-only map of its
    file, one at a time: the folder writes it out with no copy into Python, and the driver never holds more than
    one archive. `check` runs before each archive (a cancel: `ArchiveFolder.append` then undoes what it appended).
    `messages` counts every archive's messages; `pieces()` gives the archives' piece hashes, in the same order."""

    def __init__(self, rows: list, topics: Sequence[bytes], check: Callable[[], None] | None = None):
        rows = [r.asDict() if hasattr(r, "asDict") else r for r in rows]   # pyspark Rows (collect()) as dicts
        check_rows(rows)
        self.rows = sorted(rows, key=lambda r: (r["window"], r["chunk"]))
        self.topics = tuple(topics)
        self.messages = sum(r["messages"] for r in rows)
        self._check = check

    def pieces(self) -> bytes | None:
        """The piece hashes the executors computed for these archives, in archive order (what they add to the
        torrent's `pieces` once appended); None if a row has none."""
        pieces = [r.get("pieces") for r in self.rows]
        return None if any(p is None for p in pieces) else b"".join(pieces)

    def window_rows(self, window: int) -> list[dict]:
        """The rows of one window, in chunk order."""
        return [r for r in self.rows if r["window"] == window]

    def __iter__(self) -> Iterator[NewArchive]:
        return archives_of(self.rows, self.topics, self._check)


def archives_of(rows: Sequence[dict], topics: tuple[bytes, ...], check: Callable[[], None] | None = None,
                unlink: bool = False) -> Iterator[NewArchive]:
    """Each row's archive in turn, `check` first; a spooled one as a read-only map of its file (see
    EncodedArchives), its file removed once the next archive is asked for (`unlink`: the folder has written it, and
    a spool file removed soon is never written back to disk)."""
    for r in rows:
        if check is not None:
            check()
        if r["spool"]:
            with open(r["spool"], "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as raw:
                yield NewArchive(r["start"], r["end"], topics, raw)
            if unlink:
                try:
                    os.unlink(r["spool"])
                except OSError:
                    pass
        else:
            yield NewArchive(r["start"], r["end"], topics, bytes(r["raw"]))


def check_rows(rows: list) -> None:
    """Raise PipelineError for the first error row: an executor that cannot see the stage or the store first
    (its code names the host and path), then an encoding failure."""
    for code in (STAGE_UNSEEN, STORE_UNSEEN):
        unseen = next((r for r in rows if r["error"] and r["error"].startswith(code + "\t")), None)
        if unseen is not None:
            raise PipelineError(unseen["error"], code=code)
    for r in rows:
        if r["error"]:
            raise PipelineError(f"encoding window [{r['start']}, {r['end']}) chunk {r['chunk']} failed: {r['error']}",
                                code="encode-failed")


def encode_on_spark(spark, db_path: str, topics: Sequence[bytes], windows: Sequence[tuple[int, int]], *,
                    cap: int = MAX_ARCHIVE_PAYLOAD, transform: ArchiveTransform | None = None,
                    hold: tuple[str, int] | None = None, plan: str = "fused",
                    spool_dir: Path | str | None = None, stage: Path | str | None = None,
                    check: Callable[[], None] | None = None) -> EncodedArchives:
    """Run the Spark part; the archives come back in archive order (window, then chunk).

    plan "fused": one task per window reads it ordered by SQLite and chunks and encodes it (`fused_rows`; messages
    never cross the JVM). plan "dataframe": messages become a DataFrame, Spark
    sorts each window (sortWithinPartitions) and mapInArrow chunks and encodes. Both give the same bytes.
    With `spool_dir` (an existing folder the executors can write) archives are handed over as files: collecting
    hundreds of MB of archive cells exhausts the 2 GB driver heap (measured at 1M messages).
    With `stage` (a job folder of core.pipeline.stage whose windows are staged) executors read the staged windows
    instead of `db_path` and write archives to `<stage>/out` (always the fused plan). An executor that cannot see
    the stage, or open the store, gives a PipelineError with code "stage-unseen" / "store-unseen" (its message is
    the error row; core.pipeline.stage.unseen_message makes the line). `check` runs before each archive is
    handed over (a cancel between archives)."""
    if plan not in PLANS:
        raise ValueError(f"unknown build plan {plan!r} (choose from {PLANS})")
    if not windows or not topics:
        return EncodedArchives([], topics)
    spool = str(spool_dir) if spool_dir is not None else None
    if stage is not None:
        encoded = read_stage_archives(spark, str(stage), topics, windows, cap, transform, hold)
    elif plan == "fused":
        return EncodedArchives(fused_rows(spark, db_path, topics, windows, cap, transform, hold, spool), topics, check)
    else:
        encoded = (read_messages(spark, db_path, topics, windows, cap)
                   .sortWithinPartitions("window", "timestamp", "hash")
                   .mapInArrow(make_encoder(windows, topics, cap, transform, hold, spool), ENCODED_SCHEMA))
    return EncodedArchives(encoded.collect(), topics, check)


# Fused plan: tasks per core, each a share of the windows (task_windows). A task costs ~25 ms of Python-worker and
# ~10 ms of JVM CPU (1M messages in 40 windows, all CPU of the build: 40 tasks 6.3 s, 8 tasks 4.9 s, 4 tasks 4.5 s; see
# docs/BENCHMARKS.md "Spark on a cluster"); two per core still even out uneven windows and a slower core.
TASKS_PER_CORE = 2


def fused_rows(spark, db_path: str, topics: Sequence[bytes], windows: Sequence[tuple[int, int]], cap: int,
               transform: ArchiveTransform | None, hold: tuple[str, int] | None, spool: str | None) -> list[dict]:
    """The fused plan: one Spark job, each task (an RDD partition; source.store_archive_rows) reading its share
    of the windows (task_windows) from the store and encoding them. One job because each costs ~0.1 s of driver
    JVM CPU (a trivial RDD job, measured; a Python data source job more: it is planned in a Python worker
    first)."""
    from core.pipeline.source import store_archive_rows
    path, tps, ws = db_path, tuple(topics), [tuple(w) for w in windows]
    sc = spark.sparkContext
    cores = max(1, sc.defaultParallelism)
    plan = task_windows(len(ws), min(len(ws), TASKS_PER_CORE * cores), cores)

    def task(it):
        return store_archive_rows(path, tps, [(i, *ws[i]) for t in it for i in plan[t]], cap, transform, spool,
                                  hold)

    rows = sc.parallelize(range(len(plan)), len(plan)).mapPartitions(task).collect()
    return [dict(zip(ENCODED_NAMES, r)) for r in rows]


def task_windows(windows: int, tasks: int, cores: int) -> list[list[int]]:
    """The windows of each fused task, in the order each task encodes them. Tasks start `cores` at a time, in task
    order; each such group covers the next run of windows, dealt out in turn to its tasks, so that windows are
    finished about in archive order and the driver can append them while the job runs (core/pipeline/stream.py)
    rather than wait for one task's run behind another's."""
    plan: list[list[int]] = [[] for _ in range(tasks)]
    for first in range(0, tasks, cores):
        group = range(first, min(tasks, first + cores))
        lo, hi = windows * group[0] // tasks, windows * (group[-1] + 1) // tasks
        for k, w in enumerate(range(lo, hi)):
            plan[group[k % len(group)]].append(w)
    return plan


def warm_up_plans(master: str) -> tuple[str, ...]:
    """The plans the warm-up runs. Local mode: the fused plan only, what every local build runs (the `dataframe`
    plan is chosen in code only, no command or setting asks for it); it reads through a Python data source, whose
    first use in a session starts three more Python daemons and a Spark SQL worker daemon, ~3 s of CPU, left to the
    first job that needs them. On a cluster both: a build with --stage-dir reads through a data source too."""
    return ("fused",) if master.startswith("local") else PLANS


def warm_up_build(spark, plans: tuple[str, ...] | None = None) -> int:
    """Read and encode one message from a throw-away store (pays the first-job costs ahead of time), in `plans`
    (default: warm_up_plans of the session's master)."""
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
        # one window per core, so that every Python worker has imported the encoder (the others are empty)
        windows = [(i * 100, i * 100 + 100) for i in range(max(1, spark.sparkContext.defaultParallelism))]
        return sum(sum(1 for _ in encode_on_spark(spark, db, [b"warm"], windows, plan=p, spool_dir=spool))
                   for p in (plans or warm_up_plans(spark.sparkContext.master)))
