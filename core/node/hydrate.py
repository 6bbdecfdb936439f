"""The single-process import of archives into the member history, as the member node and `archivist import` run it.

The rules (whole windows, one transaction per window, never delete) are core/history_import.py's; the Spark hydrate
job follows the same ones and writes the same rows. `offloaded_hydrator` runs this same hydrator in a worker
process (core/node/offload.py), so that an import does not hold the window's GIL.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Mapping

from core.archive.codec import IndexEntry
from core.archive.constants import DATA_FILE
from core.history_import import (ArchiveOpener, WindowImport, finish_authors, read_window_preview, read_window_rows,
                                 shared_pool)
from core.storage.history import HistoryWriteError
from core.storage.member_history import MemberHistory


READ_AHEAD_MIN_BYTES = 24_000_000
"""An import whose windows after the first hold fewer bytes than this (~50k messages) reads and decodes each in its
turn, in the writing thread: the RowPool's worker process costs ~0.3 s of CPU to start (a new interpreter importing
the decoder), more than decoding 50k messages in place (~3.6 us each). Above it the read ahead hides the decoding
behind the writes, when a core is free for it (read_ahead_pays)."""


def read_ahead_pays(rest_bytes: int | None, pool_running: bool, load: float | None = None,
                    cores: int | None = None) -> bool:
    """Whether decoding the next window in a RowPool worker while this one is written saves time: the windows left
    (`rest_bytes`, None: unknown) are worth the pool's start (READ_AHEAD_MIN_BYTES) or it is running already, and a
    core is free for it (two or more cores, the 1-minute load average at least one below their count). The read
    ahead costs more CPU in all than decoding in turn (the worker's decode and marshal, ~1.2x the decode; here the
    rows read back, ~0.3x; and the writer runs ~10 % slower beside a busy core: measured, docs/BENCHMARKS.md); on a
    machine with no free core that CPU comes out of the writer's share (Linux shares a busy machine between
    sessions, autogroup), so there the windows are decoded in turn, in the writing thread."""
    if rest_bytes is not None and rest_bytes < READ_AHEAD_MIN_BYTES and not pool_running:
        return False
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:             # no load average on this system: assume a free core
            load = 0.0
    cores = cores if cores is not None else os.cpu_count() or 1
    return cores >= 2 and load + 1 <= cores          # one core: nowhere for the worker to run beside the writer


def window_import(chosen: Mapping[str, IndexEntry]) -> WindowImport:
    """The archives of ONE window (what MemberNode hands a hydrator) as a WindowImport."""
    windows = {(e.start, e.end) for e in chosen.values()}
    if len(windows) != 1:
        raise ValueError(f"a hydrator call takes the archives of one window, got {len(windows)} windows")
    (start, end), = windows
    return WindowImport(start, end, tuple(sorted(chosen, key=lambda a: (chosen[a].offset, a))))


def reference_hydrator(history: MemberHistory, unwrap: ArchiveOpener | None = None, defer_authors: bool = True,
                       read_ahead: bool | None = None):
    """hydrator(community_id, folder, {id: entry of one window}) -> rows written, in one transaction.

    `unwrap` opens encrypted archives (raises KeyMissing when the key is not held). With `defer_authors` (the
    default) a window's rows are written without their authors, which `hydrate.finish_authors(cid, progress)`
    fills in afterwards (core.history_import.finish_authors; the member node and `archivist import` call it after
    the windows, and at start for what a crash left); the rows end the same as without.

    `read_ahead`: whether `prepare` reads the next window while this one is written (True: always, False: never,
    None: when it pays, `read_ahead_pays`). The rows are the same either way."""
    ahead: dict[tuple, Future] = {}
    reader: list[ThreadPoolExecutor] = []       # made on the first read ahead
    queued: list[tuple] = []                    # prepare()d, started once the next hydrate() has its own rows

    def read(cid: str, folder: Path, chosen: Mapping[str, IndexEntry], pool=None):
        w = window_import(chosen)
        if not defer_authors:
            return w, read_window_rows(Path(folder) / DATA_FILE, cid, chosen, w, unwrap), ()
        return (w, *read_window_preview(Path(folder) / DATA_FILE, cid, chosen, w, unwrap, pool))

    def prepare(cid: str, folder: Path, chosen: Mapping[str, IndexEntry], rest_bytes: int | None = None) -> None:
        """Read the window that comes next while this one is written: hydrate() of that window then takes its
        rows, or its error. The thread reads and checks the bytes and hands the decoding to a worker process
        (RowPool.preview), so that it does not take the GIL from the thread that writes: SQLite lets go of it for
        each row's step, and a decoding thread kept it for up to the 5 ms switch interval each time.

        The read starts in the next hydrate() call, once that window's own rows are in hand: the first window is
        decoded in the caller's thread, while the worker process starts in a thread of its own (RowPool.warm), so
        that the second window's decoding does not wait for it.
        `rest_bytes` (optional): the bytes of this window and every later one in the import. When the read ahead
        does not pay (`read_ahead` False, or None and read_ahead_pays says no: too few bytes left for the pool's
        start, or no free core) nothing is read ahead: each window is decoded in its turn, in the caller's thread.
        With the authors inline (defer_authors=False) the read ahead starts at once unless `read_ahead` is False:
        there the workers recover every signer (~45 us a message), which always outweighs moving the rows."""
        if not defer_authors:               # authors inline: the workers recover every signer, always worth it
            if read_ahead is not False:
                start(cid, folder, dict(chosen))
            return
        if read_ahead is False or read_ahead is None and not read_ahead_pays(rest_bytes, shared_pool().running):
            return
        if not reader:                      # the worker starts now, beside the first window: ready for the second
            reader.append(ThreadPoolExecutor(1, thread_name_prefix="import-read-ahead"))
            threading.Thread(target=shared_pool().warm, name="import-warm-up").start()
        queued.append((cid, folder, dict(chosen)))

    def start(cid: str, folder: Path, chosen: Mapping[str, IndexEntry]) -> None:
        hydrate.windows_read_ahead += 1
        if not reader:
            reader.append(ThreadPoolExecutor(1, thread_name_prefix="import-read-ahead"))
        ahead[(cid, str(folder), tuple(sorted(chosen)))] = reader[0].submit(read, cid, folder, chosen, shared_pool())
        while len(ahead) > 2:               # one being written, one read ahead: no more (a skipped window's)
            ahead.pop(next(iter(ahead)))

    def hydrate(cid: str, folder: Path, chosen: Mapping[str, IndexEntry]) -> int:
        got = ahead.pop((cid, str(folder), tuple(sorted(chosen))), None)
        try:
            w, rows, pending = got.result() if got is not None else read(cid, folder, chosen)
        finally:                            # the next window's read ahead, even when this one failed
            while queued:
                start(*queued.pop(0))
        return history.import_window(cid, w.start, w.end, rows, w.archive_ids, pending)
    hydrate.imported = history.imported_archive_ids     # the member's record of what is imported (core.node.member)
    hydrate.history, hydrate.unwrap = history, unwrap   # what offloaded_hydrator needs to run it elsewhere
    hydrate.finish_authors = partial(finish_history, history)
    hydrate.prepare = prepare
    hydrate.windows_read_ahead = 0                      # how many windows were read ahead (tests, benches)
    return hydrate


def finish_history(history: MemberHistory, cid: str, progress=None) -> int:
    """What an import ends with, after its windows: the history's indexes and pragmas as usual again
    (MemberHistory.end_import), then finish_authors."""
    history.end_import()
    return finish_authors(history, cid, progress)


_HISTORIES: dict[str, MemberHistory] = {}      # in a worker process: one connection per history file, kept


def hydrate_job(history_path: str, keys_path: str | None, cid: str, folder: str,
                chosen: Mapping[str, IndexEntry]) -> int:
    """reference_hydrator, in a worker process: the same function on the same files (its own connection to the
    history database; the group keys read from the node's key file when the node opens encrypted archives)."""
    from core.status.archive_encryption import GroupKeyStore, open_archive_bytes
    history = _HISTORIES.get(history_path)
    if history is None:
        history = _HISTORIES[history_path] = MemberHistory(history_path)
    unwrap = None if keys_path is None else partial(open_archive_bytes, store=GroupKeyStore(keys_path))
    return reference_hydrator(history, unwrap)(cid, Path(folder), chosen)


def authors_job(history_path: str, cid: str, report=None) -> int:
    """finish_authors in a worker process, on its own connection to the history database."""
    history = _HISTORIES.get(history_path)
    if history is None:
        history = _HISTORIES[history_path] = MemberHistory(history_path)
    return finish_history(history, cid, report)


def offloaded_hydrator(offloader, hydrator, keys_path: Path | None):
    """`hydrator` (a reference_hydrator) run by `offloader` in a worker process. `keys_path`: the group key file
    behind the hydrator's unwrap (None: it has none). A worker that dies mid-window leaves the window unwritten
    (one transaction): that is a HistoryWriteError, which the member node retries later like a full disk."""
    from core.node.offload import JobCancelled, WorkerDied
    path = str(hydrator.history.path)
    written = [False]         # a window went to the worker since its last authors pass

    def hydrate(cid: str, folder: Path, chosen: Mapping[str, IndexEntry]) -> int:
        written[0] = True
        try:
            return offloader.run(hydrate_job, path, None if keys_path is None else str(keys_path), cid,
                                 str(folder), dict(chosen))
        except JobCancelled:
            raise
        except WorkerDied as e:
            err = HistoryWriteError(f"{e}; nothing of this window was written")
            err.code = WorkerDied.code
            raise err from None

    def finish(cid: str, progress=None) -> int:
        if not written[0] and not hydrator.history.pending_author_count(cid):
            # nothing pending and no window written since the worker's last pass (a member's start, most often):
            # its answer is known, and the member's start does not wait for a worker process to start (0.3-0.9 s)
            if progress is not None:
                progress(0, 0)
            return 0
        try:
            done = offloader.run(authors_job, path, cid, progress=progress)
            written[0] = False
            return done
        except JobCancelled:          # the engine is stopping: the authors stay pending for the next start
            raise
        except WorkerDied as e:       # each batch is one transaction: what was not written stays pending
            err = HistoryWriteError(f"{e}; the authors not written yet stay pending")
            err.code = WorkerDied.code
            raise err from None
    hydrate.imported = hydrator.imported
    hydrate.history, hydrate.unwrap, hydrate.offloaded = hydrator.history, hydrator.unwrap, True
    if hasattr(hydrator, "finish_authors"):
        hydrate.finish_authors = finish
    return hydrate
