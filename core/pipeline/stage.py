"""The stage folder (`--stage-dir`): on a cluster, executors read only what the driver staged, never the SQLite store.

The driver reads each 7-day window as the reference build does (core.archive.columnar: the store's rows a batch at a
time, into columns in archive order, the cap rule applied) and writes it, in that order, as one Parquet file
`<stage-dir>/<app>/in/window=<n>/part.parquet`; executors (source.StageArchivesSource) read one window each, chunk
and encode it with the reference's bulk encoder (encode.encode_staged_window: columns straight from the Arrow
buffers) and write each archive to `<stage-dir>/<app>/out/`; the driver appends them (core.pipeline.build). `<app>`
is the Spark application ID plus a random suffix, created 0700 (its sub-folders too), every file 0600; it is removed
after the job, whatever its end. An executor that cannot see the stage answers with a row naming its host, and the
job fails with one line (`StageUnseen`).

The stage is a path of the local file system (a shared mount such as NFS, at the same path on every machine and
owned by the same user); Hadoop URLs (hdfs://, s3a://) are not handled.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Sequence

from core.archive.diskio import disk_error
from core.pipeline.session import JobFailed
from core.pipeline.source import BATCH_BYTES, DATA_UNSEEN, STAGE_COLUMNS, STAGE_SCHEMA, STAGE_UNSEEN, STORE_UNSEEN, \
    stage_window_file


class StageUnseen(JobFailed):
    """An executor cannot see the stage folder (or, without a stage, open the store): one line naming the path
    and the host."""


_UNSEEN = {
    STAGE_UNSEEN: "cannot see the stage folder {path}: --stage-dir must be a folder shared at the same path on "
                  "every worker (and the driver)",
    STORE_UNSEEN: "cannot open the message store {path}: give --stage-dir (a folder shared by this machine and "
                  "every worker), or put the store at the same path on every worker",
    DATA_UNSEEN: "cannot open the downloaded archives {path}: give --stage-dir (a folder shared by this machine "
                 "and every worker), or put the folder at the same path on every worker",
}


def unseen_message(error: str, outcome: str = "nothing was written") -> str | None:
    """The one line for an executor's error row `<code>\t<host>\t<path>` (source.unseen_row), else None."""
    parts = error.split("\t") if isinstance(error, str) else ()
    if len(parts) != 3 or parts[0] not in _UNSEEN:
        return None
    code, host, path = parts
    return f"the Spark executor on host {host} {_UNSEEN[code].format(path=path)}; {outcome}"


def _mkdir_private(path: Path) -> None:
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)   # whatever the umask


class Stage:
    """One job's folder under the stage dir: `in/` (staged windows, written by the driver) and `out/` (archives,
    written by executors). Use as a context manager: the folder is removed on exit."""

    def __init__(self, stage_dir: Path | str, app_id: str):
        self.root = Path(stage_dir).absolute()
        self.path = self.root / f"{app_id}-{uuid.uuid4().hex[:8]}"
        self.inp = self.path / "in"
        self.out = self.path / "out"

    def create(self) -> "Stage":
        try:
            if not self.root.is_dir():
                self.root.mkdir(mode=0o700, parents=True)
            for p in (self.path, self.inp, self.out):
                _mkdir_private(p)
        except OSError as e:
            self.remove()
            raise disk_error(e, getattr(e, "filename", None) or self.path, "creating the stage folder",
                             "nothing was written") from None
        return self

    def remove(self) -> None:
        """Remove the job's folder; a task killed by a cancel may still be finishing a file, so try twice."""
        for _ in range(2):
            shutil.rmtree(self.path, ignore_errors=True)
            if not self.path.exists():
                return

    def __enter__(self) -> "Stage":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.remove()


def _private_file(path: str):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    return os.fdopen(fd, "wb")


def stage_windows(con: sqlite3.Connection, topics: Sequence[bytes], windows: Sequence[tuple[int, int]], cap: int,
                  stage: Stage, check_cancelled=None) -> int:
    """Write every window's messages (archive order, those over `cap` left out) as Parquet under `stage.inp`, one
    file per window, empty windows included (so a missing file is an error, not an empty week). Returns the rows.
    In bulk, as the reference build reads: rows a batch at a time (`window_columns`), columns handed to Arrow as
    they are (fixed-width hashes, topics and sigs as one buffer each), no Python object per message."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    assert tuple(STAGE_SCHEMA.names) == STAGE_COLUMNS
    rows = 0
    for n, (lo, hi) in enumerate(windows):
        if check_cancelled is not None:
            check_cancelled()
        path = stage_window_file(str(stage.path), n)
        try:
            _mkdir_private(Path(path).parent)
            # uncompressed: payloads do not compress, and snappy cost ~35 ms per window of ~11 MB to read back
            with _private_file(path) as f, pq.ParquetWriter(f, STAGE_SCHEMA, compression="none") as w:
                pending, size = [], 0
                for cols in window_columns(con, topics, lo, hi, cap):
                    batch = columns_to_arrow(cols)
                    pending.append(batch)
                    rows += batch.num_rows
                    size += batch.nbytes
                    if size >= BATCH_BYTES:   # row groups of ~16 MB
                        w.write_table(pa.Table.from_batches(pending, STAGE_SCHEMA))
                        pending, size = [], 0
                w.write_table(pa.Table.from_batches(pending, STAGE_SCHEMA))   # an empty window: no rows
        except OSError as e:
            raise disk_error(e, getattr(e, "filename", None) or path, "staging the messages in",
                             "nothing was written") from None
    return rows


def window_columns(con: sqlite3.Connection, topics: Sequence[bytes], lo: int, hi: int, cap: int):
    """One window's messages in archive order as core.archive.columnar.Columns, batches of whole timestamps,
    those over `cap` left out: the reading of the build's bulk encoder (columnar.window_batches), without the
    encoding. Rows the bulk reading does not take are read again as messages, as there."""
    from core.archive import columnar
    from core.storage import waku_messages
    if not topics:
        return
    cur = waku_messages.scan_rows(con, topics, lo, hi)
    for rows in columnar.whole_timestamps(cur, lambda: columnar.BATCH_ROWS):
        cols = columnar.rows_to_columns(rows, topics)
        if cols is None:
            cols = columnar.Columns.from_messages(
                list(waku_messages.query_messages_through(con, topics, rows[0][1], rows[-1][1])))
        cols = columnar.within_cap(cols, cap)[0]
        if len(cols):
            yield cols


def columns_to_arrow(cols):
    """Columns -> one Arrow batch of STAGE_SCHEMA (a fixed-width column becomes a binary array over its buffer)."""
    import numpy as np
    import pyarrow as pa
    n = len(cols)

    def blobs(col):
        if isinstance(col, np.ndarray):
            width = col.shape[1]
            offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
            return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                           pa.py_buffer(np.ascontiguousarray(col))])
        return pa.array(col, pa.binary())
    return pa.record_batch([pa.array(cols.timestamp.astype(np.int64)), blobs(cols.hash), blobs(cols.sig),
                            blobs(cols.topic), blobs(cols.payload), blobs(cols.padding),
                            blobs(cols.third_party_id).cast(pa.string())], schema=STAGE_SCHEMA)


COPY_BYTES = 1 << 20


def stage_archives(data_path: str, entries: Sequence[tuple[str, int, int]], stage: Stage,
                   check_cancelled=None) -> None:
    """Hydrate: copy each chosen archive's bytes `data[offset : offset + size]` to `stage.inp/<archive id>` (0600),
    a piece at a time. A short `data` gives a short copy: the executor reports it like a short read of `data`."""
    try:
        with open(data_path, "rb") as src:
            for aid, offset, size in entries:
                if check_cancelled is not None:
                    check_cancelled()
                src.seek(offset)
                with _private_file(str(stage.inp / aid)) as dst:
                    left = size
                    while left > 0:
                        piece = src.read(min(left, COPY_BYTES))
                        if not piece:
                            break
                        dst.write(piece)
                        left -= len(piece)
    except OSError as e:
        raise disk_error(e, getattr(e, "filename", None) or stage.inp, "staging the archives in",
                         "nothing was imported") from None
