"""Executor-side chunking and encoding, shared by both build plans (see core.pipeline.build)."""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence

from core.archive import codec
from core.archive.build import ArchiveTransform
from core.archive.codec import ArchiveMessage
from core.archive.partition import chunk_messages

# One row per archive. `pieces`: the SHA-1 of each piece of the archive as the folder writes it (padded to whole
# pieces), hashed here beside the encoding so that the driver never reads `data` back for the torrent.
ENCODED_SCHEMA = ("window INT, chunk INT, start BIGINT, end BIGINT, messages BIGINT, raw BINARY, error STRING, "
                  "spool STRING, pieces BINARY")
ENCODED_NAMES = ["window", "chunk", "start", "end", "messages", "raw", "error", "spool", "pieces"]


def hold(address: tuple[str, int] | None, window: int | None = None) -> None:
    """Test seam: block this task until the test's socket sends a byte or closes (proves cancel mid-job). The fused
    plan's task first sends its first window's number and a newline, so that a test can release some tasks only."""
    if address is None:
        return
    import socket
    with socket.create_connection(tuple(address), timeout=120) as s:
        if window is not None:
            s.sendall(b"%d\n" % window)
        s.recv(1)


def spool_name(window: int, chunk: int) -> str:
    return f"{window:06d}-{chunk:06d}.archive"


def write_spool(spool_dir: str, window: int, chunk: int, raw: bytes) -> str:
    """Write one encoded archive (mode 0600) into the driver-made spool folder (never created here: once the driver
    has removed it after a cancel, a late task fails instead of leaving a file behind)."""
    import os
    path = os.path.join(spool_dir, spool_name(window, chunk))
    with os.fdopen(os.open(path + ".part", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "wb") as f:
        f.write(raw)
    os.replace(path + ".part", path)
    return path


# A window's manifest (encoded_rows, once its last archive is spooled): the driver appends the window while the job
# still runs (core/pipeline/stream.py). NOTIFY_FILE, written by the driver, holds the address ("host port") the
# executors wake it at with one datagram per window; the datagram carries nothing the driver trusts.
NOTIFY_FILE = "notify"


def manifest_name(window: int) -> str:
    return f"{window:06d}.window"


def publish_window(spool_dir: str, window: int, rows: list[tuple]) -> None:
    """Record that `window` is encoded and spooled: its rows as JSON in `<spool>/<window>.window` (written whole:
    tmp file, then rename), then a datagram to the driver's address in NOTIFY_FILE. Best effort: on any failure
    the driver takes the window from the job's collected rows instead, at the end."""
    import json
    import os
    import socket
    try:
        path = os.path.join(spool_dir, manifest_name(window))
        body = json.dumps({"window": window, "archives": [[r[1], r[2], r[3], r[4], os.path.basename(r[7]),
                                                            r[8].hex()] for r in rows]})
        with os.fdopen(os.open(path + ".part", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600),
                       "w") as f:
            f.write(body)
        os.replace(path + ".part", path)
        with open(os.path.join(spool_dir, NOTIFY_FILE)) as f:
            host, port = f.read().split()
        family, kind, proto, _, address = socket.getaddrinfo(host, int(port), type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, kind, proto) as s:
            s.sendto(str(window).encode(), address)
    except (OSError, ValueError):
        pass


def encode_chunks(window: int, lo: int, hi: int, topics: Sequence[bytes], messages: Iterable[ArchiveMessage],
                  cap: int, transform: ArchiveTransform | None, spool_dir: str | None = None) -> Iterator[tuple]:
    """Yield one ENCODED_SCHEMA tuple per chunk of one window's ordered messages (chunk_messages +
    codec.encode_archive: the row-by-row encoder, for messages that come as objects, e.g. from the stage)."""
    encoded = ((codec.encode_archive(lo, hi, topics, chunk), len(chunk)) for chunk in chunk_messages(messages, cap))
    return encoded_rows(window, lo, hi, encoded, transform, spool_dir)


def encode_store_window(window: int, con, lo: int, hi: int, topics: Sequence[bytes], cap: int,
                        transform: ArchiveTransform | None, spool_dir: str | None = None) -> Iterator[tuple]:
    """encode_chunks of a window read straight from a `waku_messages` store, with the reference build's bulk
    encoder (core.archive.columnar.encode_window: the same query, the same bytes, one batch in memory)."""
    from core.archive import columnar
    return encoded_rows(window, lo, hi, columnar.encode_window(con, tuple(topics), lo, hi, cap), transform, spool_dir)


def encode_staged_window(window: int, lo: int, hi: int, topics: Sequence[bytes], path: str, cap: int,
                         transform: ArchiveTransform | None, spool_dir: str | None = None) -> Iterator[tuple]:
    """encode_chunks of a window the driver staged (core/pipeline/stage.py: one Parquet file, archive order, the
    cap applied), with the reference build's bulk encoder: each Arrow batch becomes columns without a Python
    object per message (fixed-width columns are views of the Arrow buffers)."""
    from core.archive import columnar

    def batches():
        import pyarrow.parquet as pq
        f = pq.ParquetFile(path)
        try:
            for b in f.iter_batches(batch_size=columnar.BATCH_ROWS):
                if b.num_rows:
                    cols, ls, lp = columnar.within_cap(staged_columns(b), cap)
                    yield columnar.Batch(ls + lp, columnar.encode_messages(cols, ls, lp))
        finally:
            f.close()
    return encoded_rows(window, lo, hi, columnar.encode_batches(batches(), lo, hi, topics, cap), transform,
                        spool_dir)


def staged_columns(b):
    """An Arrow batch of the stage's columns (source.STAGE_SCHEMA, by name) as core.archive.columnar.Columns."""
    import numpy as np
    import pyarrow as pa
    from core.archive.columnar import Columns
    n = b.num_rows

    def blobs(arr):
        """n x width uint8 view of a binary column whose values all have one width (no copy), else its bytes."""
        if arr.null_count == 0 and n:
            wide = arr.type in (pa.large_binary(), pa.large_string())
            buffers = arr.buffers()
            size = 8 if wide else 4
            offsets = np.frombuffer(buffers[1], np.int64 if wide else np.int32, n + 1, arr.offset * size)
            width = int(offsets[1] - offsets[0])
            if width and bool(np.all(np.diff(offsets) == width)):
                start = int(offsets[0])
                return np.frombuffer(buffers[2], np.uint8, n * width, start).reshape(n, width)
            if int(offsets[-1]) == int(offsets[0]):   # all empty
                return [b""] * n
        return [v or b"" for v in arr.cast(pa.binary()).to_pylist()]

    def bytes_list(arr):
        col = blobs(arr)
        return col.view(f"V{col.shape[1]}").ravel().tolist() if isinstance(col, np.ndarray) else col
    c = b.column
    ts = c("timestamp").to_numpy(zero_copy_only=False).astype(np.uint64)
    return Columns(ts, blobs(c("sig")), blobs(c("topic")), bytes_list(c("payload")), bytes_list(c("padding")),
                   blobs(c("hash")), bytes_list(c("third_party_id")))


def encoded_rows(window: int, lo: int, hi: int, encoded: Iterable[tuple[bytes, int]],
                 transform: ArchiveTransform | None, spool_dir: str | None = None) -> Iterator[tuple]:
    """(unpadded archive, message count) per chunk -> ENCODED_SCHEMA tuples. With `spool_dir` the bytes go to a
    file there and the row carries its path (big outputs never pass through the JVM's heap). Each row carries the
    archive's piece hashes (torrent.archive_piece_hashes, after the transform: the bytes `data` will hold).
    Errors become a row (the driver names the window and fails the job); they never kill the task. Once every
    chunk of the window is spooled without error, `publish_window` tells the driver (it appends while the job runs)."""
    from core.archive.codec import padded_size
    from core.archive.torrent import archive_piece_hashes
    i, n = 0, 0
    it = iter(encoded)
    spooled: list[tuple] = []
    while True:
        try:
            raw, n = next(it)
        except StopIteration:
            if spool_dir is not None and len(spooled) == i:   # every chunk spooled, no error row
                publish_window(spool_dir, window, spooled)
            return
        except Exception as e:  # noqa: BLE001 - encoding failed: one error row ends this window
            yield (window, i, lo, hi, 0, b"", f"{type(e).__name__}: {e}", None, None)
            return
        try:
            if transform is not None:
                raw = transform(raw)
            pieces = archive_piece_hashes(raw, padded_size(len(raw))[1])
            if spool_dir is not None:
                row = (window, i, lo, hi, n, b"", None, write_spool(spool_dir, window, i, raw), pieces)
                spooled.append(row)
                yield row
            else:
                yield (window, i, lo, hi, n, raw, None, None, pieces)
        except Exception as e:  # noqa: BLE001
            yield (window, i, lo, hi, n, b"", f"{type(e).__name__}: {e}", None, None)
        i += 1


def encoded_batch(pa, row: tuple):
    return pa.RecordBatch.from_arrays(
        [pa.array([row[0]], pa.int32()), pa.array([row[1]], pa.int32()), pa.array([row[2]], pa.int64()),
         pa.array([row[3]], pa.int64()), pa.array([row[4]], pa.int64()), pa.array([row[5]], pa.binary()),
         pa.array([row[6]], pa.string()), pa.array([row[7]], pa.string()), pa.array([row[8]], pa.binary())],
        names=ENCODED_NAMES)


def make_encoder(windows: Sequence[tuple[int, int]], topics: Sequence[bytes], cap: int,
                 transform: ArchiveTransform | None, hold_at: tuple[str, int] | None = None,
                 spool_dir: str | None = None):
    """mapInArrow function of the `dataframe` plan: Arrow batches sorted by (window, timestamp, hash) in, one
    row per encoded archive out. A window's messages are materialised (chunking needs them in order)."""
    windows = [tuple(w) for w in windows]
    topics = tuple(topics)

    def encode(batches):
        import pyarrow as pa
        hold(hold_at)
        current: int | None = None
        pending: list = []
        for b in batches:
            cols = b.to_pydict()
            for w, ts, h, sig, topic, payload, padding, tpid in zip(
                    cols["window"], cols["timestamp"], cols["hash"], cols["sig"], cols["topic"], cols["payload"],
                    cols["padding"], cols["third_party_id"]):
                if w != current:
                    if current is not None:
                        for row in encode_chunks(current, *windows[current], topics, pending, cap, transform,
                                                   spool_dir):
                            yield encoded_batch(pa, row)
                    current, pending = w, []
                pending.append(ArchiveMessage(sig, ts, topic, payload, padding, h, tpid))
        if current is not None:
            for row in encode_chunks(current, *windows[current], topics, pending, cap, transform,
                                                   spool_dir):
                yield encoded_batch(pa, row)

    return encode
