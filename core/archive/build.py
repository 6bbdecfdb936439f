"""The single-process reference build path: message store -> archives appended -> index -> torrent.

The Spark pipeline (core/pipeline) must produce exactly the same bytes; tests compare the two. Both open the folder
through ArchiveFolder, which checks the index before trusting it (CorruptFolder, or an index rebuilt from data:
`BuildResult.rebuilt_index`). Disk faults surface as one ArchiveError (`disk-full`, `read-only`, `io-error`)
naming the file; a failed append leaves data and index as they were, and a failed torrent write leaves no torrent
that disagrees with them (the next build or start-up writes it).
"""
from __future__ import annotations

import gc
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from itertools import chain
from typing import Callable, Generator, Iterable, Iterator, Sequence, TypeVar

from core.archive import codec
from core.archive.constants import PARTITION_SECONDS, PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.archive.diskio import (DISK_MARGIN, atomic_write, check_free_space, discard, disk_error, free_bytes,
                                 tmp_path_of)
from core.archive.folder import ArchiveFolder, IndexCodec, NewArchive
from core.archive.partition import chunk_messages, missing_windows
from core.archive.torrent import build_metainfo, parse_metainfo
from core.storage import waku_messages

T = TypeVar("T")

# Optional transform of each encoded archive (hash-ratchet encryption for encrypted communities).
ArchiveTransform = Callable[[bytes], bytes]


@dataclass
class BuildPlan:
    """What a build will cover: windows [start, end) over `topics`."""

    start: int | None
    end: int
    windows: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class BuildResult:
    community_id: str
    new_archive_ids: list[str]
    archives: list[dict]
    infohash: str | None
    magnet: str | None
    torrent_path: str | None
    data_bytes: int
    messages: int
    rebuilt_index: str | None = None   # set when opening the folder had to rebuild a damaged index from data

    def to_json(self) -> dict:
        return self.__dict__.copy()


def community_folder(data_dir: Path | str, community_id: str) -> Path:
    return Path(data_dir) / community_id


def torrent_path(torrent_dir: Path | str, community_id: str) -> Path:
    return Path(torrent_dir) / f"{community_id}.torrent"


def plan_build(folder: ArchiveFolder, oldest: int | None, end: int, start: int | None = None,
               interval: int = PARTITION_SECONDS) -> BuildPlan:
    """The folder's missing windows up to `end` (core.archive.partition.missing_windows)."""
    start, windows = missing_windows(folder.last_end, lambda: oldest, end, start, interval)
    return BuildPlan(start, end, windows)


def encode_windows(windows: Iterable[tuple[int, int]], topics: Sequence[bytes],
                   fetch: Callable[[int, int], Iterable[codec.ArchiveMessage]],
                   transform: ArchiveTransform | None = None) -> Iterable[tuple[NewArchive, int]]:
    """Yield (archive, message count) per non-empty chunk of each window, in order."""
    topics = tuple(topics)
    for lo, hi in windows:
        for chunk in chunk_messages(fetch(lo, hi)):
            raw = codec.encode_archive(lo, hi, topics, chunk)
            if transform is not None:
                raw = transform(raw)
            yield NewArchive(lo, hi, topics, raw), len(chunk)


def encode_store_windows(con: sqlite3.Connection, windows: Iterable[tuple[int, int]], topics: Sequence[bytes],
                         transform: ArchiveTransform | None = None) -> Iterator[tuple[NewArchive, int]]:
    """encode_windows over a `waku_messages` store, with the bulk encoder (core.archive.columnar): the same bytes,
    one batch of rows in memory at a time."""
    from core.archive import columnar   # numpy: loaded when a build runs, not by every command
    topics = tuple(topics)
    for lo, hi in windows:
        for raw, n in columnar.encode_window(con, topics, lo, hi):
            yield NewArchive(lo, hi, topics, raw if transform is None else transform(raw)), n


_END = object()


def ahead(items: Iterator[T], depth: int = 1) -> Generator[T, None, None]:
    """`items`, made up to `depth` ahead by a worker thread: while the caller writes one archive (file I/O lets
    the GIL go) the next is read and encoded. An error in the worker is raised here; closing this generator
    stops the worker (after the item it is making) and closes `items`."""
    box: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for item in items:
                box.put((item, None))
                if stop.is_set():
                    break
            else:
                box.put((_END, None))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which raises it
            box.put((_END, e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=work, name="archive-encoder", daemon=True)
    worker.start()
    try:
        while True:
            item, error = box.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():   # take what it offers until it sees `stop`
            try:
                box.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


def write_torrent(folder: ArchiveFolder, community_id: str, torrent_dir: Path | str,
                  trackers: Sequence[str], data_pieces: bytes | None = None) -> tuple[str, str, Path]:
    """(Re)write the .torrent atomically; returns (infohash, magnet, path). `data_pieces`: the piece hashes of
    `data` when the caller has them (the Spark build; torrent.build_metainfo), else `data` is read and hashed.

    On an I/O error a torrent that no longer describes `data || index` is removed rather than left to be seeded,
    and the error names the file; the next build or `recover_community` writes it."""
    tdir = Path(torrent_dir)
    path = torrent_path(tdir, community_id)
    try:
        tdir.mkdir(parents=True, exist_ok=True)
        raw = build_metainfo(folder.path, community_id, trackers, data_pieces)
    except OSError as e:
        raise disk_error(e, getattr(e, "filename", None) or path, "making the torrent for", "data and index are "
                         "saved; the torrent was not changed") from None
    try:
        if not (path.exists() and path.read_bytes() == raw):
            atomic_write(path, raw)
    except OSError as e:
        stale = _drop_stale_torrent(path, raw)
        raise disk_error(e, path, "writing the torrent", "data and index are saved and agree; " + (
            "the old torrent no longer matched them and was removed" if stale else "no torrent was changed") +
            "; the next build or start-up writes it") from None
    mi = parse_metainfo(raw, expected_name=community_id)
    return mi.infohash, mi.magnet(), path


def _drop_stale_torrent(path: Path, want: bytes) -> bool:
    try:
        if path.exists() and path.read_bytes() != want:
            path.unlink()
            return True
    except OSError:
        pass
    return False


def check_disk_space(folder: Path, need: int, free_space: Callable[[Path], int] | None = None) -> None:
    """Refuse before writing anything when the archives (plus a margin) would not fit (diskio.check_free_space)."""
    check_free_space(folder, need, "the new archives need", free_space)


def check_build_space(con: sqlite3.Connection, folder: Path, topics: Sequence[bytes],
                      windows: Sequence[tuple[int, int]], free_space: Callable[[Path], int] | None = None) -> None:
    """check_disk_space for a build of `windows`: each message costs a few bytes of framing (64 counted); each
    archive pads up to a piece; the torrent is ~1/5000. First without a pass over the rows: the store's pages
    (stored_bytes, S) hold every blob byte and at least 11 bytes per row (cell pointer, sizes, record header of
    7 columns), so the rows' bytes plus 64 per row stay under S * (1 + 64 / 11) < 7 S. Only when that bound does
    not fit are the rows counted and summed (payload_bytes)."""
    pieces = PIECE_LENGTH * (len(windows) + 1)
    free = free_bytes(folder, free_space)
    if free >= 7 * waku_messages.stored_bytes(con) + pieces + DISK_MARGIN:
        return
    count, raw = waku_messages.payload_bytes(con, topics, windows[0][0], windows[-1][1])
    check_disk_space(folder, raw + 64 * count + pieces, lambda p: free)


def build_archives(db_path: Path | str, community_id: str, topics: Sequence[bytes], data_dir: Path | str,
                   torrent_dir: Path | str, *, start: int | None = None, end: int | None = None,
                   trackers: Sequence[str] = (), transform: ArchiveTransform | None = None,
                   now: Callable[[], float] = time.time,
                   free_space: Callable[[Path], int] | None = None,
                   index_codec: IndexCodec | None = None) -> BuildResult:
    """Build all missing archives of one community from a status-go `waku_messages` database.
    Encrypted communities pass `transform` (each archive) and `index_codec` (the index).

    Archives stream from the store into `folder.append` one at a time (memory stays flat whatever the store
    holds); a failure while they are made undoes the append like any other (core.archive.folder)."""
    end = int(now()) if end is None else end
    folder = ArchiveFolder(community_folder(data_dir, community_id), create=True, index_codec=index_codec)
    con = waku_messages.connect(db_path, create=False)
    try:
        plan = plan_build(folder, waku_messages.oldest_timestamp(con, topics), end, start)
        if plan.windows:
            check_build_space(con, folder.path, topics, plan.windows, free_space)
        counted = [0]

        def archives() -> Iterator[NewArchive]:
            for archive, n in encode_store_windows(con, plan.windows, topics, transform):
                counted[0] += n
                yield archive
        stream = ahead(archives())
        collecting = gc.isenabled()
        gc.disable()   # the batches hold many small objects, none in a cycle: cyclic GC would only rescan them
        try:
            first = next(stream, None)   # nothing new: the folder is not touched
            new_ids = [] if first is None else folder.append(chain([first], stream))
        finally:
            stream.close()   # stops the worker before the connection closes
            if collecting:
                gc.enable()
    finally:
        con.close()
    return finish_build(folder, community_id, torrent_dir, trackers, new_ids, counted[0])


def finish_build(folder: ArchiveFolder, community_id: str, torrent_dir: Path | str, trackers: Sequence[str],
                 new_ids: list[str], messages: int, data_pieces: bytes | None = None) -> BuildResult:
    """Write the torrent (when the folder has any archive) and summarise. Shared with the Spark pipeline, which
    passes `data_pieces` (hashed by its executors, see write_torrent)."""
    infohash = magnet = tpath = None
    if folder.entries:
        infohash, magnet, p = write_torrent(folder, community_id, torrent_dir, trackers, data_pieces)
        tpath = str(p)
    archives = [{"id": aid, "from": folder.entries[aid].start, "to": folder.entries[aid].end,
                 "offset": folder.entries[aid].offset, "size": folder.entries[aid].size,
                 "padding": folder.entries[aid].padding} for aid in new_ids]
    return BuildResult(community_id, new_ids, archives, infohash, magnet, tpath, folder.described_length, messages,
                       folder.rebuilt_index)


def recover_community(data_dir: Path | str, torrent_dir: Path | str, community_id: str,
                      trackers: Sequence[str] = (), index_codec: IndexCodec | None = None
                      ) -> tuple[ArchiveFolder, bool]:
    """After a crash: check the index, cut an interrupted append off `data` (or rebuild a damaged index from
    data; `folder.rebuilt_index` says why) and make the torrent agree with `data || index`.
    Raises CorruptFolder (an ArchiveError with `.code`, one line) when the folder cannot be trusted.

    Returns (folder, torrent_rewritten)."""
    folder = ArchiveFolder(community_folder(data_dir, community_id), create=True, index_codec=index_codec)
    tpath = torrent_path(torrent_dir, community_id)
    if tmp_path_of(tpath).exists():
        discard(tmp_path_of(tpath))  # left by a crash inside an atomic write
    if not folder.entries:
        return folder, False
    before = tpath.read_bytes() if tpath.exists() else None
    _, _, path = write_torrent(folder, community_id, torrent_dir, trackers)
    return folder, path.read_bytes() != before
