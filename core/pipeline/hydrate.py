"""The Spark hydrate job: downloaded `data` + chosen index entries -> decoded in executors -> member history DB.

Executors read their archives' bytes straight from the `data` file (it must be readable where they run), check the
padding and metadata, decode, and unwrap each payload. The driver streams the results (toLocalIterator) and writes
the history database, one transaction per archive window (core.storage.history.replace_range).

Canonical-history rule, with one refinement: archives that are chunks of the same window share [from, to), so
replacing the range once per archive would let the second chunk delete the first one's messages. The chunks of a
window are therefore written together, in one transaction. When only some chunks of a window were chosen, their
messages are upserted without deleting anything (we never delete what the chosen archives do not fully cover).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from core.archive import codec
from core.archive.constants import DATA_FILE, INDEX_FILE
from core.archive.errors import ArchiveError
from core.pipeline.session import SparkJob, SparkOwner
from core.pipeline.unwrap import Unwrapper, default_unwrap
from core.storage import history


HYDRATE_PARTITION_BYTES = 64 << 20


class HydrateError(ArchiveError):
    code = "hydrate-failed"

    def __init__(self, message: str, *, failed: dict[str, str], code: str | None = None):
        super().__init__(message, code=code, archive_id=next(iter(failed), None))
        self.failed = failed


@dataclass
class HydrateResult:
    community_id: str
    imported_archive_ids: list[str] = field(default_factory=list)
    windows: int = 0
    messages: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return self.__dict__.copy()


def decode_entries(entries: Iterable[tuple], data_path: str, community_id: str, unwrap: Unwrapper):
    """Executor side: for each (archive_id, offset, size, padding, start, end) yield (archive_id, error, rows)."""
    with open(data_path, "rb") as f:
        for aid, offset, size, padding, start, end in entries:
            try:
                f.seek(offset)
                blob = f.read(size)
                if len(blob) != size:
                    raise ArchiveError(f"data holds {len(blob)} of the archive's {size} bytes", code="data-short")
                if padding and blob[size - padding:].count(0) != padding:
                    raise ArchiveError("padding is not zeros", code="bad-padding")
                arch = codec.decode_archive(blob[:size - padding], archive_id=aid)
                if (arch.start, arch.end) != (start, end):
                    raise ArchiveError(f"archive says [{arch.start}, {arch.end}), index says [{start}, {end})",
                                       code="metadata-mismatch")
                rows = []
                for m in arch.messages:
                    u = unwrap(m.payload)
                    h = m.hash or codec.keccak256(m.to_pb().SerializeToString(deterministic=True))
                    if u is None:
                        rows.append((community_id, h, m.timestamp, m.topic, m.sig or None, None, None, None, None,
                                     None, m.payload, aid))
                    else:
                        rows.append((community_id, h, m.timestamp, m.topic, u.author or m.sig or None, u.chat_id,
                                     u.clock, u.message_id, u.message_type, u.text, m.payload, aid))
                yield aid, None, rows
            except Exception as e:  # noqa: BLE001 - reported by archive ID on the driver
                yield aid, f"{getattr(e, 'code', type(e).__name__)}: {e}", None


def hydrate_job(spark, job: SparkJob | None, folder: Path | str, community_id: str, history_db: Path | str, *,
                archive_ids: Sequence[str] | None = None, unwrap: Unwrapper = default_unwrap,
                fault_after_windows: int | None = None) -> HydrateResult:
    """Import the chosen archives (default: all in the index) of a downloaded folder into `history_db`.

    `fault_after_windows` is a test seam: raise inside the transaction of that window (0-based)."""
    folder = Path(folder)
    data_path, index_path = str((folder / DATA_FILE).resolve()), folder / INDEX_FILE
    index = codec.decode_index(index_path.read_bytes())
    chosen = list(index) if archive_ids is None else list(archive_ids)
    missing = [a for a in chosen if a not in index]
    if missing:
        raise HydrateError(f"archive {missing[0]} is not in the index", failed={a: "not in index" for a in missing},
                           code="unknown-archive")
    entries = sorted(((a, index[a]) for a in set(chosen)), key=lambda kv: (kv[1].start, kv[1].end, kv[1].offset))
    siblings: dict[tuple[int, int], int] = {}
    for e in index.values():
        siblings[(e.start, e.end)] = siblings.get((e.start, e.end), 0) + 1
    groups: dict[tuple[int, int], list[str]] = {}
    for aid, e in entries:
        groups.setdefault((e.start, e.end), []).append(aid)

    result = HydrateResult(community_id)
    if not entries:
        return result
    sc = spark.sparkContext
    # toLocalIterator brings one partition's decoded rows at a time into the 2 GB driver heap (two with prefetch):
    # keep a partition near 64 MB of archives (one partition of 1.25M rows killed the JVM at 10M messages).
    total = sum(e.size for _, e in entries)
    slices = min(len(entries), max(2, sc.defaultParallelism * 2, -(-total // HYDRATE_PARTITION_BYTES)))
    if job is not None:
        job.expected_tasks = slices
    payload = [(a, e.offset, e.size, e.padding, e.start, e.end) for a, e in entries]
    rdd = sc.parallelize(payload, slices).mapPartitions(
        lambda it: decode_entries(it, data_path, community_id, unwrap))

    con = history.connect(history_db)
    try:
        pending: dict[str, list] = {}
        bad: set[tuple[int, int]] = set()
        written = 0
        for aid, err, rows in rdd.toLocalIterator(prefetchPartitions=True):
            e = index[aid]
            window = (e.start, e.end)
            if err is not None:
                result.failed[aid] = err
                bad.add(window)
            else:
                pending[aid] = rows
            ids = groups[window]
            if not all(a in pending or a in result.failed for a in ids):
                continue
            if window in bad:
                for a in ids:
                    pending.pop(a, None)
                continue
            if job is not None:
                job.check_cancelled()
            all_rows = [r for a in ids for r in pending.pop(a)]
            rows_iter = all_rows if fault_after_windows != written else _explode_midway(all_rows)
            result.messages += history.replace_range(con, community_id, window[0], window[1], rows_iter, ids,
                                                     delete=len(ids) == siblings[window])
            result.imported_archive_ids.extend(ids)
            result.windows += 1
            written += 1
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
