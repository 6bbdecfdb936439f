"""`archivist export`: a community's messages as Parquet or JSON lines, one row per message, partitioned by week.

Source: a community archive folder (`data` + `index`; encrypted archives open with the group keys given) or a
member history database (core/storage/history.py). Executors decode (export_rows.py); the driver collects only
the signed community descriptions (channel names) and any archive that failed, then Spark writes `OUT.tmp`, which
is renamed to OUT once complete. A failure or cancel removes `OUT.tmp`: OUT is never half written.
"""
from __future__ import annotations

import os
import re
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE, community_id
from core.archive.inspect import read_index
from core.pipeline import export_rows as X
from core.pipeline.session import SparkJob, SparkOwner, archive_slices

FORMATS = ("parquet", "jsonl")
COLUMNS = ("time", "channel", "chat_id", "author", "author_name", "type", "text", "hash", "archive_id",
           "community_id")
# What Spark's file writer leaves in an output folder: a leftover OUT.tmp made only of these is ours to remove.
_SPARK_NAMES = re.compile(r"^(_SUCCESS|_temporary|week=.*|\..*\.crc)\Z")


class ExportError(Exception):
    """The export cannot be done as asked (bad source, output in the way, an archive that does not open); one line
    for the user. `code` says which; `archive_id` names the archive when one failed."""

    def __init__(self, message: str, code: str = "export-failed", archive_id: str | None = None):
        super().__init__(message)
        self.code, self.archive_id = code, archive_id


@dataclass
class ExportResult:
    out: str
    format: str
    source: str                                           # "folder" or "history"
    messages: int = 0
    weeks: dict[str, int] = field(default_factory=dict)   # week -> messages
    channels_named: int = 0                               # chat IDs a signed description names

    def to_json(self) -> dict:
        return self.__dict__.copy()


def source_kind(source: Path | str) -> str:
    """'folder' (has `index` and `data`) or 'history' (an SQLite file with history_messages). Raises ExportError."""
    p = Path(source)
    if p.is_dir():
        if (p / INDEX_FILE).is_file() and (p / DATA_FILE).is_file():
            return "folder"
        raise ExportError(f"{p} is not a community archive folder (it needs `{INDEX_FILE}` and `{DATA_FILE}`)",
                          "bad-source")
    if not p.is_file():
        raise ExportError(f"{p} does not exist", "bad-source")
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            ok = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history_messages'"
                             ).fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError:
        ok = None
    if not ok:
        raise ExportError(f"{p} is neither a community archive folder nor a member history database", "bad-source")
    return "history"


def folder_community_id(folder: Path | str, cid: str | None) -> str:
    """The community of a folder export: `cid` when given, else the folder's name (core.archive.constants'
    community_id rule, either way). Raises ExportError."""
    try:
        return community_id(cid or Path(folder).resolve().name)
    except ValueError:
        if cid:
            raise ExportError(f"{cid!r} is not a community ID (0x + 66 hex digits)", "no-community-id") from None
    raise ExportError(f"cannot tell the community of {folder}: its name is not a community ID; give --community-id",
                      "no-community-id")


def check_output(out: Path | str, overwrite: bool = False) -> Path:
    """The absolute output path, refused (ExportError) when it is a file or a non-empty folder (unless
    `overwrite`), or when a leftover OUT.tmp is not Spark output. Checked before any Spark work, and again at the
    rename."""
    out = Path(out).absolute()
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder", "output-exists")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ExportError(f"{out} is not empty: choose another --out or add --overwrite", "output-exists")
    tmp = _tmp(out)
    if tmp.exists() and not (tmp.is_dir() and not tmp.is_symlink()
                             and all(_SPARK_NAMES.match(n.name) for n in tmp.iterdir())):
        raise ExportError(f"{tmp} is in the way and is not a previous export's leftover: remove it", "output-exists")
    return out


def _tmp(out: Path) -> Path:
    return out.with_name(out.name + ".tmp")


def _publish(tmp: Path, out: Path, overwrite: bool, fmt: str) -> None:
    """Rename the complete export into place (replacing an existing OUT only with `overwrite`)."""
    for crc in tmp.rglob(".*.crc"):      # Hadoop's local checksum files: noise for DuckDB / pandas users
        crc.unlink()
    if fmt == "jsonl":                   # Spark calls JSON lines `.json`
        for part in tmp.glob("week=*/part-*.json"):
            part.rename(part.with_suffix(".jsonl"))
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        try:
            os.rename(tmp, out)
        except OSError as e:             # someone created OUT meanwhile
            raise ExportError(f"cannot move the export into {out}: {e.strerror}", "output-exists") from None
        return
    if not overwrite:
        raise ExportError(f"{out} is not empty: choose another --out or add --overwrite", "output-exists")
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    os.rename(out, old)
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


def _folder_rdd(sc, folder: Path, community_id: str, store):
    import functools
    from core.status.archive_encryption import open_archive_bytes, open_index_bytes
    try:
        raw = read_index(folder / INDEX_FILE)
        index = codec.decode_index(open_index_bytes(raw, store))
    except Exception as e:  # noqa: BLE001 - an index that does not open is one line for the user
        raise ExportError(f"the index of {folder} does not open: {e}", getattr(e, "code", "bad-index")) from None
    entries = sorted(index.items(), key=lambda kv: (kv[1].start, kv[1].offset))
    data_path = str((folder / DATA_FILE).resolve())
    opener = functools.partial(open_archive_bytes, store=store)    # encrypted without a key: KeyMissing
    payload = [(a, e.offset, e.size, e.padding, e.start, e.end) for a, e in entries]
    slices = archive_slices([e.size for _, e in entries], sc.defaultParallelism)
    return sc.parallelize(payload, slices).mapPartitions(
        lambda it: X.folder_rows(it, data_path, community_id, opener)), len(payload)


def _history_rdd(sc, path: Path, community_id: str | None):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        weeks = X.history_weeks(con, community_id)
    finally:
        con.close()
    db = str(path.resolve())
    slices = max(1, min(len(weeks), sc.defaultParallelism * 2))
    return sc.parallelize(weeks, slices).mapPartitions(lambda it: X.history_rows(it, db)), len(weeks)


def export_job(spark, job: SparkJob | None, source: Path | str, out: Path | str, *, fmt: str = "parquet",
               community_id: str | None = None, store=None, overwrite: bool = False,
               downloaded_only: bool = False) -> ExportResult:
    """Export `source` (folder or history database) to `out`. `store`: a GroupKeyStore for encrypted archives.
    `downloaded_only`: skip archives that are not (fully) downloaded instead of failing."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: choose {' or '.join(FORMATS)}", "bad-format")
    source = Path(source)
    kind = source_kind(source)
    out = check_output(out, overwrite)
    sc = spark.sparkContext
    if kind == "folder":
        rdd, n = _folder_rdd(sc, source, folder_community_id(source, community_id), store)
    else:
        rdd, n = _history_rdd(sc, source, folder_community_id(source, community_id) if community_id else None)
    result = ExportResult(str(out), fmt, kind)
    tmp = _tmp(out)
    shutil.rmtree(tmp, ignore_errors=True)      # check_output made sure it is a previous export's leftover
    df = spark.createDataFrame(rdd if n else sc.emptyRDD(), X.INTERNAL_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # One pass decodes everything into the cache and brings back only descriptions and failures.
        special = df.filter(F.col("desc_names").isNotNull() | F.col("error").isNotNull()).select(
            "archive_id", "desc_clock", "desc_names", "error", "error_code").collect()
        failed = [r for r in special if r.error is not None
                  and not (downloaded_only and r.error_code == "archive-incomplete")]
        if failed:
            first = failed[0]
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            hint = ("; export what is downloaded with --downloaded-only"
                    if first.error_code == "archive-incomplete" else "")
            raise ExportError(f"archive {first.archive_id} cannot be read: {first.error}{more}{hint}",
                              first.error_code or "archive-failed", first.archive_id)
        names = X.channel_map((r.desc_clock, r.desc_names) for r in special if r.desc_names is not None)
        result.channels_named = len(names)
        rows = df.filter(F.col("error").isNull())
        if names:
            lookup = F.create_map(*[F.lit(x) for kv in sorted(names.items()) for x in kv])
            channel = F.coalesce(F.element_at(lookup, F.col("chat_id")), F.col("chat_id"))
        else:
            channel = F.col("chat_id")
        rows = rows.select(F.timestamp_seconds("ts").alias("time"), channel.alias("channel"),
                           *[c for c in COLUMNS[2:]], "week")
        result.weeks = {r.week: r["count"] for r in rows.groupBy("week").count().orderBy("week").collect()}
        result.messages = sum(result.weeks.values())
        if job is not None:
            job.check_cancelled()
        # One file per week (all of a week in one task), rows in time order inside it.
        w = rows.repartition("week").sortWithinPartitions("week", "time", "hash").write.partitionBy("week")
        if fmt == "parquet":
            w.mode("errorifexists").parquet(str(tmp))
        else:
            w.mode("errorifexists").option("ignoreNullFields", "false").json(str(tmp))
        if job is not None:
            job.check_cancelled()
        _publish(tmp, out, overwrite, fmt)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        df.unpersist()
    return result


def submit_export(owner: SparkOwner, source: Path | str, out: Path | str, **kw) -> SparkJob:
    return owner.submit(lambda spark, job: export_job(spark, job, source, out, **kw), f"export {Path(source).name}")
