"""The Spark part of a build: read, order, chunk and encode archives in the executors, and the warm-up job.

Split from core/pipeline/build.py so that core/pipeline/session.py can run the warm-up (`SparkOwner.warm()`)
without importing the build, which imports the session: build -> session -> spark_encode, no circle.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

from core.archive.build import ArchiveTransform
from core.archive.constants import MAX_ARCHIVE_PAYLOAD
from core.archive.errors import ArchiveError
from core.archive.folder import NewArchive
from core.pipeline.encode import ENCODED_SCHEMA, make_encoder
from core.pipeline.source import STAGE_UNSEEN, STORE_UNSEEN, read_archives, read_messages, read_stage_archives
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
                    spool_dir: Path | str | None = None, stage: Path | str | None = None) -> EncodedArchives:
    """Run the Spark part; the archives come back in archive order (window, then chunk).

    plan "fused": the archives data source reads each window ordered by SQLite and chunks and encodes it in the same
    executor task (messages never cross the JVM). plan "dataframe": messages become a DataFrame, Spark sorts each
    window (sortWithinPartitions) and mapInArrow chunks and encodes. Both give the same bytes.
    With `spool_dir` (an existing folder the executors can write) archives are handed over as files: collecting
    hundreds of MB of archive cells exhausts the 2 GB driver heap (measured at 1M messages).
    With `stage` (a job folder of core.pipeline.stage whose windows are staged) executors read the staged windows
    instead of `db_path` and write archives to `<stage>/out` (always the fused plan). An executor that cannot see
    the stage, or open the store, gives a PipelineError with code "stage-unseen" / "store-unseen" (its message is
    the error row; core.pipeline.stage.unseen_message makes the line)."""
    if plan not in PLANS:
        raise ValueError(f"unknown build plan {plan!r} (choose from {PLANS})")
    if not windows or not topics:
        return EncodedArchives([], topics)
    spool = str(spool_dir) if spool_dir is not None else None
    if stage is not None:
        encoded = read_stage_archives(spark, str(stage), topics, windows, cap, transform, hold)
    elif plan == "fused":
        encoded = read_archives(spark, db_path, topics, windows, cap, transform, hold, spool)
    else:
        encoded = (read_messages(spark, db_path, topics, windows, cap)
                   .sortWithinPartitions("window", "timestamp", "hash")
                   .mapInArrow(make_encoder(windows, topics, cap, transform, hold, spool), ENCODED_SCHEMA))
    rows = sorted(encoded.collect(), key=lambda r: (r["window"], r["chunk"]))
    for code in (STAGE_UNSEEN, STORE_UNSEEN):
        unseen = next((r for r in rows if r["error"] and r["error"].startswith(code + "\t")), None)
        if unseen is not None:
            raise PipelineError(unseen["error"], code=code)
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
