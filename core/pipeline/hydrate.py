"""The Spark hydrate job: downloaded `data` + chosen index entries -> decoded in executors -> member history DB.

Executors read their archives' bytes straight from the `data` file (it must be readable where they run) or, with
a stage folder on a cluster (`--stage-dir`), from the copies the driver put there (core/pipeline/stage.py), and turn
them into rows with core.history_import.read_archive_rows (the same checks and rows as the single-process
importer). The driver streams the results (toLocalIterator) and writes each window, all its chunks together, in
one transaction (core.storage.history.import_window). Which archives form which window, and what is already
imported, is core.history_import.plan_import's decision, as for the member node.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

from core.archive import codec
from core.archive.codec import IndexEntry
from core.archive.constants import DATA_FILE, INDEX_FILE
from core.archive.errors import ArchiveError
from core.archive.inspect import read_index
from core.history_import import ImportResult, WindowImport, plan_import, read_archive_rows
from core.pipeline.session import SparkJob, SparkOwner, archive_slices
from core.pipeline.source import DATA_UNSEEN, STAGE_UNSEEN, unseen_error
from core.pipeline.stage import Stage, StageUnseen, stage_archives, unseen_message
from core.status.unwrap import Unwrapper, default_unwrap
from core.storage import history




class HydrateError(ArchiveError):
    code = "hydrate-failed"

    def __init__(self, message: str, *, failed: dict[str, str], code: str | None = None):
        super().__init__(message, code=code, archive_id=next(iter(failed), None))
        self.failed = failed


def decode_entries(entries: Iterable[tuple], data_path: str, community_id: str, unwrap: Unwrapper,
                   open_archive=None, stage: str | None = None):
    """Executor side: for each (archive_id, offset, size, padding, start, end) yield (archive_id, error, rows).
    With `stage` (the job's stage folder, core/pipeline/stage.py) each archive is `<stage>/in/<archive id>` and its
    offset 0. A `data` file or stage this machine cannot open gives every entry the same error,
    `<code>\t<host>\t<path>` (the driver's one line)."""
    if stage is not None and not os.path.isdir(os.path.join(stage, "in")):
        yield from _all_failed(entries, unseen_error(STAGE_UNSEEN, stage))
        return
    if stage is not None:
        for aid, offset, size, padding, start, end in entries:
            try:
                with open(os.path.join(stage, "in", aid), "rb") as f:
                    rows = read_archive_rows(f, community_id, aid, IndexEntry(start, end, (), 0, size, padding),
                                             open_archive, unwrap)
                yield aid, None, rows
            except Exception as e:  # noqa: BLE001 - reported by archive ID on the driver
                yield aid, f"{getattr(e, 'code', type(e).__name__)}: {e}", None
        return
    try:
        f = open(data_path, "rb")
    except OSError:
        yield from _all_failed(entries, unseen_error(DATA_UNSEEN, data_path))
        return
    with f:
        for aid, offset, size, padding, start, end in entries:
            try:
                e = IndexEntry(start, end, (), offset, size, padding)
                yield aid, None, read_archive_rows(f, community_id, aid, e, open_archive, unwrap)
            except Exception as e:  # noqa: BLE001 - reported by archive ID on the driver
                yield aid, f"{getattr(e, 'code', type(e).__name__)}: {e}", None


def _all_failed(entries: Iterable[tuple], error: str):
    for entry in entries:
        yield entry[0], error, None


def hydrate_job(spark, job: SparkJob | None, folder: Path | str, community_id: str, history_db: Path | str, *,
                archive_ids: Sequence[str] | None = None, selection=None, unwrap: Unwrapper = default_unwrap,
                open_archive=None, open_index=None, fault_after_windows: int | None = None,
                stage_dir: Path | str | None = None) -> ImportResult:
    """Import the chosen archives of a downloaded folder into `history_db`: `archive_ids`, else those `selection`
    (a core.torrent.selection.Selection) picks, else all; always whole windows, skipping what is imported.

    `open_archive`/`open_index` open an encrypted community's archives and index (picklable: they run in
    executors). `fault_after_windows` is a test seam: raise inside the transaction of that window (0-based).
    `stage_dir` (default: the owner's `SparkSettings.stage_dir`; ignored in local mode): the driver copies the
    chosen archives there and executors read only those copies, never `data` (core/pipeline/stage.py)."""
    folder = Path(folder)
    data_path, index_path = str((folder / DATA_FILE).resolve()), folder / INDEX_FILE
    raw_index = read_index(index_path)
    index = codec.decode_index(open_index(raw_index) if open_index else raw_index)
    if archive_ids is not None:
        chosen = list(archive_ids)
    else:
        chosen = selection.choose(index) if selection is not None else list(index)
    con = history.connect(history_db)
    try:
        try:
            done = history.imported_archive_ids(con, community_id)
            plan = plan_import(index, chosen, done)
        except ArchiveError as e:
            raise HydrateError(str(e), failed={e.archive_id: "not in index"}, code=e.code) from None
        result = ImportResult(community_id, chosen=len(chosen), already_imported=sum(1 for a in chosen if a in done))
        if not plan:
            return result
        window_of = {a: w for w in plan for a in w.archive_ids}
        entries = [(a, index[a]) for w in plan for a in w.archive_ids]
        sc = spark.sparkContext
        if stage_dir is None and job is not None:
            stage_dir = job.owner.settings.stage_dir
        stage = None
        if stage_dir is not None and not sc.master.startswith("local"):
            stage = Stage(stage_dir, sc.applicationId).create()
            try:
                stage_archives(data_path, [(a, e.offset, e.size) for a, e in entries], stage,
                               job.check_cancelled if job is not None else None)
            except BaseException:
                stage.remove()
                raise
        else:
            os.stat(data_path)   # FileNotFoundError (exit 2) before any task, as for a missing index
        slices = archive_slices([e.size for _, e in entries], sc.defaultParallelism)
        if job is not None:
            job.expected_tasks = slices
        payload = [(a, e.offset, e.size, e.padding, e.start, e.end) for a, e in entries]
        staged = str(stage.path) if stage is not None else None
        rdd = sc.parallelize(payload, slices).mapPartitions(
            lambda it: decode_entries(it, data_path, community_id, unwrap, open_archive, staged))
        try:
            _write_windows(con, job, community_id, rdd, window_of, result, fault_after_windows)
        finally:
            if stage is not None:
                stage.remove()
    finally:
        con.close()
    if result.failed:
        first = next(iter(result.failed))
        err = HydrateError(f"archive {first} failed: {result.failed[first]}"
                           + (f" (and {len(result.failed) - 1} more)" if len(result.failed) > 1 else ""),
                           failed=result.failed)
        err.result = result  # what was imported before/around the failure
        raise err
    return result


def _write_windows(con, job: SparkJob | None, community_id: str, rdd, window_of: dict, result: ImportResult,
                   fault_after_windows: int | None) -> None:
    """Driver side: stream the decoded archives and write each window whole (or not at all)."""
    pending: dict[str, list] = {}
    bad: set[WindowImport] = set()
    written = 0
    for aid, err, rows in rdd.toLocalIterator(prefetchPartitions=True):
        w = window_of[aid]
        if err is not None and unseen_message(err) is not None:   # an executor cannot open the stage or `data`
            raise StageUnseen(unseen_message(err, f"{result.windows} windows were imported before it; running "
                                             "again imports the rest" if result.windows else "nothing was imported"))
        if err is not None:
            result.failed[aid] = err
            bad.add(w)
        else:
            pending[aid] = rows
        if not all(a in pending or a in result.failed for a in w.archive_ids):
            continue
        if w in bad:                      # a window is written whole or not at all
            for a in w.archive_ids:
                pending.pop(a, None)
            continue
        if job is not None:
            job.check_cancelled()
        all_rows = [r for a in w.archive_ids for r in pending.pop(a)]
        rows_iter = all_rows if fault_after_windows != written else _explode_midway(all_rows)
        result.messages += history.import_window(con, community_id, w.start, w.end, rows_iter, w.archive_ids)
        result.imported_archive_ids.extend(w.archive_ids)
        result.windows += 1
        written += 1


class InjectedFault(RuntimeError):
    pass


def _explode_midway(rows: list):
    for i, r in enumerate(rows):
        if i == len(rows) // 2:
            raise InjectedFault("injected fault in the middle of a window's transaction")
        yield r
    raise InjectedFault("injected fault at the end of a window's transaction")


def submit_hydrate(owner: SparkOwner, folder: Path | str, community_id: str, history_db: Path | str,
                   **kw) -> SparkJob:
    return owner.submit(lambda spark, job: hydrate_job(spark, job, folder, community_id, history_db, **kw),
                        f"hydrate {community_id[:12]}")
