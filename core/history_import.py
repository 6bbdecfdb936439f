"""The one importer: which downloaded archives go into a member's history, in which groups, and the rows they give.

Every import path uses this module: the member node (core/node/hydrate.py), `archivist import`, and the Spark
hydrate job (core/pipeline/hydrate.py, whose executors call `read_archive_rows`). Nothing else decides these
rules, so they cannot drift apart again (they did once, and a week split into chunks lost messages).

The rules:
- A 7-day window bigger than 30 MB is several archives with the same [from, to): its chunks. A selection always
  takes whole windows (`whole_windows`): "latest" is every chunk of the newest window, a range every chunk of every
  window it touches.
- The chunks of a window are written together, in one transaction (`core.storage.history.import_window`).
- An import never removes a message: each archived message replaces the local copy with the same hash (the
  archive's copy wins), and a local message that no archive holds is kept. (Spec 61 says a member deletes every
  local message in the archive's time range; a message the archive lacks may be one the control node received
  too late to archive, so deleting it would lose history. docs/NODE.md lists this departure.)
- What is imported is recorded in the same transaction as its rows, so a crash leaves each window either fully
  imported and recorded, or untouched; running the import again finishes the job without duplicates.
- Authors may come second (`read_window_preview` + `finish_authors`): recovering each signer's public key is
  most of an import's CPU, so the member's importer writes a window's rows with every other field first (the
  history is visible), records which rows still wait for their author in the same transaction, and fills the
  authors in afterwards, batch by batch, on every core. The final row is `history_row`'s, whichever way it came:
  the second pass opens the stored payload with the same unwrapper and rewrites the opened fields. A crash between
  or during the passes leaves the rows pending, and the next import or start finishes them.
"""
from __future__ import annotations

import atexit
import contextlib
import marshal
import mmap
import multiprocessing
import os
import shutil
import tempfile
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Callable, Iterable, Mapping, Sequence

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.errors import ArchiveError
from core.archive.index_check import MAX_ARCHIVE_BYTES
from core.status.unwrap import Unwrapped, Unwrapper, preview_opened, status_unwrap

ArchiveOpener = Callable[[bytes], bytes]        # encrypted communities: ciphertext -> plain archive bytes


@dataclass(frozen=True, slots=True)
class WindowImport:
    """One transaction's worth: the archives of one window that this import writes."""

    start: int
    end: int
    archive_ids: tuple[str, ...]       # in `data` order


@dataclass
class ImportResult:
    """What one import did (the member node's, `archivist import`'s and the Spark job's report)."""

    community_id: str
    chosen: int = 0                    # archives the selection picked (whole windows)
    already_imported: int = 0          # of those, imported by an earlier run: skipped
    imported_archive_ids: list[str] = field(default_factory=list)
    windows: int = 0
    messages: int = 0
    failed: dict[str, str] = field(default_factory=dict)     # archive ID -> "code: reason"

    def to_json(self) -> dict:
        return self.__dict__.copy()


def window_of(e: IndexEntry) -> tuple[int, int]:
    return e.start, e.end


def whole_windows(index: Mapping[str, IndexEntry], chosen: Iterable[str]) -> list[str]:
    """`chosen` grown to every archive of each window it touches, oldest first (`data` order for a torrent;
    Codex index entries, which have no offset, work too)."""
    wanted = {window_of(index[a]) for a in chosen}
    order = sorted(index.items(), key=lambda kv: (kv[1].start, kv[1].end, getattr(kv[1], "offset", 0), kv[0]))
    return [a for a, e in order if window_of(e) in wanted]


def plan_import(index: Mapping[str, IndexEntry], chosen: Iterable[str], imported: Iterable[str] = ()
                ) -> list[WindowImport]:
    """The windows to write, oldest first, each with the chosen archives not imported yet.

    Raises ArchiveError (code `unknown-archive`) when a chosen ID is not in the index."""
    chosen = list(chosen)
    missing = [a for a in chosen if a not in index]
    if missing:
        raise ArchiveError(f"archive {missing[0]} is not in the index", code="unknown-archive",
                           archive_id=missing[0])
    done = set(imported)
    by_window: dict[tuple[int, int], list[str]] = {}
    for a in whole_windows(index, chosen):
        by_window.setdefault(window_of(index[a]), []).append(a)
    out = []
    for (start, end), ids in sorted(by_window.items()):
        todo = tuple(a for a in ids if a not in done)
        if todo:
            out.append(WindowImport(start, end, todo))
    return out


def history_row(community_id: str, m: ArchiveMessage, archive_id: str, unwrap: Unwrapper = status_unwrap) -> tuple:
    """One `history_messages` row (core.storage.history.COLUMNS order). A message without a hash is keyed by the
    Keccak-256 of its encoding, so two such messages never collapse into one row."""
    return row_of(community_id, m, archive_id, unwrap(m.payload))


def row_of(community_id: str, m: ArchiveMessage, archive_id: str, u) -> tuple:
    """history_row with the message already opened (`u`: its Unwrapped, or None)."""
    h = m.hash or codec.keccak256(m.to_pb().SerializeToString(deterministic=True))
    return (community_id, h, m.timestamp, m.topic, *opened_columns(m.sig, u), m.payload, archive_id)


def opened_columns(sig: bytes | None, u: Unwrapped | None) -> tuple:
    """The row's sender, chat_id, clock, message_id, message_type and text (core.storage.history.OPENED) from the
    opened message `u` and the envelope signer `sig` (WakuMessage.sig), which is the sender when no author is
    known. A message we cannot open (None) keeps only that."""
    if u is None:      # not a Status message we can open: keep its place and raw payload
        return (sig or None, None, None, None, None, None)
    return (u.author or sig or None, u.chat_id, u.clock, u.message_id, u.message_type, u.text)


def archive_from_blob(aid: str, e: IndexEntry, blob: bytes, open_archive: ArchiveOpener | None = None
                      ) -> codec.DecodedArchive:
    """Check and decode `data[offset : offset + size]` of one archive: all bytes present, zero padding, decodes,
    and says the same window as its index entry. Raises ArchiveError (KeyMissing for a key not held)."""
    arch = codec.decode_archive(open_blob(aid, e, blob, open_archive), archive_id=aid)
    _check_window(aid, e.start, e.end, arch.start, arch.end)
    return arch


def open_blob(aid: str, e: IndexEntry, blob: bytes, open_archive: ArchiveOpener | None = None) -> bytes:
    """archive_from_blob's checks of the bytes (all present, zero padding) and its decryption: the plain archive."""
    if len(blob) != e.size:
        _incomplete(aid, e, len(blob))
    if not 0 <= e.padding <= e.size:            # open_parts refuses it (or finds the padding not zeros)
        return open_parts(aid, e, blob, b"", open_archive)
    cut = e.size - e.padding
    return open_parts(aid, e, blob[:cut], blob[cut:], open_archive)


def open_parts(aid: str, e: IndexEntry, raw: bytes, pad: bytes, open_archive: ArchiveOpener | None = None) -> bytes:
    """open_blob of the archive's bytes read as two parts, `raw` (size - padding bytes) and `pad` (the padding), the
    same checks in the same order: read so, a 10 MB archive is not copied once more to cut its padding off."""
    if len(raw) + len(pad) != e.size:
        _incomplete(aid, e, len(raw) + len(pad))
    if e.padding > e.size:
        raise ArchiveError(f"archive {aid}: padding {e.padding} is larger than its size {e.size}",
                           code="padding-exceeds-size", archive_id=aid)
    if raw[:1] in (b"", b"\0") and raw.count(0) == len(raw):     # an archive starts with a tag: no scan of it
        raise ArchiveError(f"archive {aid} is not downloaded (its bytes in data are all zeros)",
                           code="archive-incomplete", archive_id=aid)
    if pad.count(0) != e.padding:
        raise ArchiveError(f"archive {aid}: padding is not zeros", code="padding-nonzero", archive_id=aid)
    return open_archive(raw) if open_archive is not None else raw


def _incomplete(aid: str, e: IndexEntry, have: int):
    raise ArchiveError(f"archive {aid} is not fully downloaded: data holds {have} of its {e.size} bytes",
                       code="archive-incomplete", archive_id=aid)


def _check_window(aid: str, start: int, end: int, got_start: int, got_end: int) -> None:
    if (got_start, got_end) != (start, end):
        raise ArchiveError(f"archive {aid} says [{got_start}, {got_end}), its index entry [{start}, {end})",
                           code="metadata-mismatch", archive_id=aid)


def seek_archive(f, aid: str, e: IndexEntry) -> None:
    """Seek the open `data` file to an archive, after refusing a size that no archive has: the index comes from
    the torrent's owner, and one read of a hostile entry's size would take all memory."""
    if e.size > MAX_ARCHIVE_BYTES:
        raise ArchiveError(f"archive {aid}: size {e.size} is larger than any archive can be ({MAX_ARCHIVE_BYTES} "
                           "bytes at most)", code="size-absurd", archive_id=aid)
    f.seek(e.offset)


def read_archive_rows(f, community_id: str, aid: str, e: IndexEntry, open_archive: ArchiveOpener | None = None,
                      unwrap: Unwrapper = status_unwrap) -> list[tuple]:
    """The history rows of one archive, read from the open `data` file `f`."""
    seek_archive(f, aid, e)
    blob = f.read(e.size)
    return rows_of_messages(community_id, aid, archive_from_blob(aid, e, blob, open_archive).messages, unwrap)


def read_window_rows(data_path, community_id: str, index: Mapping[str, IndexEntry], w: WindowImport,
                     open_archive: ArchiveOpener | None = None, unwrap: Unwrapper = status_unwrap) -> list[tuple]:
    """All rows of a window's archives (the single-process path; Spark executors call read_archive_rows).

    The archives are checked and decoded here; turning their messages into rows (opening each Status message and
    recovering its signer: most of an import's CPU) is spread over worker processes when there are enough of them
    (RowPool). The rows, and their order, are the same either way."""
    out: list[tuple] = []
    for a, messages in _decode_window(data_path, index, w, open_archive):
        out.extend(_ROW_POOL.rows(community_id, a, messages, unwrap))
    return out


def read_window_preview(data_path, community_id: str, index: Mapping[str, IndexEntry], w: WindowImport,
                        open_archive: ArchiveOpener | None = None, pool: "RowPool | None" = None
                        ) -> tuple[list[tuple], list[bytes]]:
    """A window's rows with every field but the author (preview_unwrap), and the hashes of the rows whose author
    finish_authors must still fill in. Same rows, in the same order, as read_window_rows once that is done.

    The archives are read, checked and decrypted here; decoding them into rows (protobuf, ~10 us a message) runs
    in `pool`'s worker process when one is given (a read ahead: the writing thread keeps the GIL), else here."""
    archives = []
    with open(data_path, "rb") as f:
        for a in w.archive_ids:
            e = index[a]
            seek_archive(f, a, e)
            cut = e.size - e.padding if 0 <= e.padding <= e.size else e.size
            raw = f.read(cut)
            archives.append((a, open_parts(a, e, raw, f.read(e.size - cut) if len(raw) == cut else b"", open_archive),
                             e.start, e.end))
    if pool is not None:
        return pool.preview(community_id, archives)
    return preview_archives(community_id, archives)


_MESSAGE_FIELDS = attrgetter("payload", "hash", "sig", "timestamp", "topic")   # one call for five fields


def preview_archives(community_id: str, archives: Sequence[tuple[str, bytes, int, int]]
                     ) -> tuple[list[tuple], list[bytes]]:
    """read_window_preview's rows and pending hashes of plain archives (archive ID, bytes, window start, end):
    decode_archive + preview_unwrap + row_of, straight from the parsed protobuf (no object per message but the
    row). Raises ArchiveError as archive_from_blob does. Per message: one attrgetter call for the five fields and
    one parse of the payload down to its chat message (core.status.unwrap.preview_opened)."""
    rows: list[tuple] = []
    pending: list[bytes] = []
    add, wait, fields = rows.append, pending.append, _MESSAGE_FIELDS
    for aid, raw, start, end in archives:
        arch = codec.parse_archive_pb(raw, archive_id=aid)
        _check_window(aid, start, end, getattr(arch.metadata, "from"), arch.metadata.to)
        for m in arch.messages:
            payload, h, sig, timestamp, topic = fields(m)
            if not h:                   # as row_of: keyed by the Keccak-256 of its encoding
                h = codec.keccak256(ArchiveMessage.from_pb(m).to_pb().SerializeToString(deterministic=True))
            opened, signed = preview_opened(payload, sig)
            add((community_id, h, timestamp, topic, *opened, payload, aid))
            if signed:
                wait(h)
    return rows, pending


def preview_spooled(community_id: str, archives: Sequence[tuple[str, bytes, int, int]], folder: str) -> str:
    """preview_archives in RowPool.preview's worker: the rows and pending hashes marshalled into a new file in
    `folder`, whose path is returned (written whole before it is returned; the caller reads and removes it).
    marshal writes these values (str, bytes, int, None in tuples and lists) ~6x faster than pickle and reads them
    back as fast, the same values. An ArchiveError is raised before any file is made."""
    packed = marshal.dumps(preview_archives(community_id, archives))
    fd, path = tempfile.mkstemp(dir=folder)
    try:
        with open(fd, "wb") as f:
            f.write(packed)
    except BaseException:
        os.unlink(path)
        raise
    return path


SPOOL_PREFIX = "archivist-rows-"


def _remove_dead_spools(base: str) -> None:
    """Remove the spool folders in `base` of processes that are gone (killed before their RowPool's shutdown)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        pid = name[len(SPOOL_PREFIX):].split("-", 1)[0]
        if not name.startswith(SPOOL_PREFIX) or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        except OSError:             # alive, another user's
            pass


def _decode_window(data_path, index: Mapping[str, IndexEntry], w: WindowImport,
                   open_archive: ArchiveOpener | None) -> list[tuple[str, list[ArchiveMessage]]]:
    """(archive ID, messages) of each of the window's archives, checked and decoded, in `w`'s order."""
    decoded = []
    with open(data_path, "rb") as f:
        for a in w.archive_ids:
            e = index[a]
            seek_archive(f, a, e)
            decoded.append((a, archive_from_blob(a, e, f.read(e.size), open_archive).messages))
    return decoded


AUTHOR_BATCH = 10_000       # rows per author transaction (~0.2-0.5 s of recovery on two cores)


def finish_authors(history, community_id: str, progress: Callable[[int, int], None] | None = None,
                   batch: int | None = None, pool: "RowPool | None" = None) -> int:
    """Fill in every author still pending in `history` (a MemberHistory): each batch's payloads are opened with
    status_unwrap (RowPool: on every core, the next batch while this one is written) and the rows rewritten in
    one transaction per batch. progress(done, total) before the first batch and after each. Returns rows done."""
    pool = pool if pool is not None else _ROW_POOL
    batch = batch or AUTHOR_BATCH
    total = history.pending_author_count(community_id)
    if progress is not None:
        progress(0, total)
    done = 0
    cur = history.pending_authors(community_id, batch) if total else []
    opened = pool.open_later([p or b"" for _, _, p, _ in cur])
    while cur:
        nxt = history.pending_authors(community_id, batch, cur[-1][0]) if len(cur) == batch else []
        next_opened = pool.open_later([p or b"" for _, _, p, _ in nxt]) if nxt else None
        history.fill_authors(community_id, [(rid, h, *opened_columns(sender, u))
                                            for (rid, h, _, sender), u in zip(cur, opened(), strict=True)])
        done += len(cur)
        if progress is not None:
            progress(done, max(total, done))
        cur, opened = nxt, next_opened
    return done


def rows_of_messages(community_id: str, aid: str, messages: Sequence[ArchiveMessage],
                     unwrap: Unwrapper = status_unwrap) -> list[tuple]:
    return [history_row(community_id, m, aid, unwrap) for m in messages]


def unwrap_payloads(payloads: Sequence[bytes]) -> list:
    """status_unwrap of each payload (what RowPool's workers run: only payloads go out, only the opened fields
    come back)."""
    return [status_unwrap(p) for p in payloads]


def describe(windows: Sequence[WindowImport]) -> str:
    n = sum(len(w.archive_ids) for w in windows)
    return f"{n} archive(s) in {len(windows)} window(s)"


class RowPool:
    """Worker processes that turn decoded archive messages into history rows.

    Opening a Status message and recovering its signer's public key (secp256k1) is about 80 % of an import's CPU
    and needs no shared state, so it runs on every core. The writes stay in the caller, one transaction per
    window, so the crash-safety rules above do not change. Small batches (the start-up costs more than it saves),
    a custom unwrapper, a single core, or a pool that broke (a killed worker) are done in this process: the same
    function, the same rows, in the same order. Workers are started with `forkserver` (never `fork`: the caller is
    a threaded engine or the Qt window) on first use, and stopped at exit."""

    MIN_MESSAGES = 6_000           # below this, in process: two workers' start-up is ~0.4 s
    CHUNK = 2_500

    def __init__(self, workers: int | None = None):
        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._spool_dir: str | None = None
        self.broken = False

    def _executor(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and not self.broken:
                ctx = multiprocessing.get_context("forkserver")
                ctx.set_forkserver_preload([__name__])    # each worker forks with this module loaded: ~0.3 s sooner
                self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
                atexit.register(self.shutdown)
            return self._pool

    def rows(self, community_id: str, aid: str, messages: Sequence[ArchiveMessage],
             unwrap: Unwrapper = status_unwrap) -> list[tuple]:
        if (self.workers < 2 or len(messages) < self.MIN_MESSAGES or unwrap is not status_unwrap or self.broken
                or multiprocessing.current_process().daemon):      # a daemonic process may not have children
            return rows_of_messages(community_id, aid, messages, unwrap)
        opened = self.open_later([m.payload for m in messages])()
        return [row_of(community_id, m, aid, u) for m, u in zip(messages, opened, strict=True)]

    def open_later(self, payloads: Sequence[bytes]) -> Callable[[], list]:
        """status_unwrap of each payload, started now on the workers; call the result for the list (in order).
        In process, and done at once, when the batch is small or no worker can run."""
        pool = None
        if self.workers >= 2 and len(payloads) >= self.MIN_MESSAGES and not self.broken \
                and not multiprocessing.current_process().daemon:      # a daemonic process may not have children
            pool = self._executor()
        if pool is None:
            opened = unwrap_payloads(payloads)
            return lambda: opened
        try:
            futures = [pool.submit(unwrap_payloads, payloads[i:i + self.CHUNK])
                       for i in range(0, len(payloads), self.CHUNK)]
        except (BrokenProcessPool, OSError, RuntimeError):
            futures = None

        def result() -> list:
            try:
                if futures is not None:
                    return [u for f in futures for u in f.result()]
            except (BrokenProcessPool, OSError, RuntimeError, AssertionError):
                pass
            # a worker died or could not start: never lose the import over it, do it here
            with self._lock:
                self.broken = True
            return unwrap_payloads(payloads)
        return result

    PREVIEW_MIN_BYTES = 2_000_000      # a window's first pass below this (~4k messages) is decoded in process

    def preview(self, community_id: str, archives: Sequence[tuple[str, bytes, int, int]]
                ) -> tuple[list[tuple], list[bytes]]:
        """preview_archives in a worker process (the caller's thread waits without the GIL, so the thread writing
        the previous window does not share it); in process when small, on one core, or when the pool broke (a
        worker that died, or a spool file that could not be written or read: the window is decoded here, whole).
        The rows come back through a file (preview_spooled, _spool), read here with one marshal.loads of its map:
        ~20 ms of this process's CPU for 25k rows, where receiving them through the result pipe and unpickling
        them took ~35 ms.
        An ArchiveError of the archives is raised here as itself."""
        pool = None
        if self.workers >= 2 and sum(len(a[1]) for a in archives) >= self.PREVIEW_MIN_BYTES and not self.broken \
                and not multiprocessing.current_process().daemon:      # a daemonic process may not have children
            pool = self._executor()
        if pool is not None:
            try:
                path = pool.submit(preview_spooled, community_id, archives, self._spool()).result()
                try:
                    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as packed:
                        rows, pending = marshal.loads(packed)      # values copied out: nothing refers to the map
                finally:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
            except (BrokenProcessPool, OSError, RuntimeError, ValueError, EOFError, TypeError):
                # a worker died or could not start, or its file is not what it wrote: never lose the window over
                # it (an ArchiveError of the archives is none of these: it is raised as itself)
                with self._lock:
                    self.broken = True
            else:
                return rows, pending
        return preview_archives(community_id, archives)

    def _spool(self) -> str:
        """The folder (this process's own, on tmpfs when there is one) where workers leave a window's rows for
        preview: a file read in one call, where the result pipe took ~35 ms of this process's CPU a window (15 MB
        received 64 KiB at a time, each read allocating what was left to receive). Made on first use, with those
        of processes that died without removing theirs; removed by shutdown."""
        with self._lock:
            if self._spool_dir is None or not os.path.isdir(self._spool_dir):
                base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
                    else tempfile.gettempdir()
                _remove_dead_spools(base)
                self._spool_dir = tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", dir=base)
            return self._spool_dir

    def warm(self) -> bool:
        """Start one worker now (the forkserver, then the process) and wait for it, so that the first preview
        does not wait for it: the read ahead calls it in its own thread while the first window is decoded and
        written. False when no worker can run (one core, a daemonic process, a broken pool)."""
        if self.workers < 2 or self.broken or multiprocessing.current_process().daemon:
            return False
        pool = self._executor()
        try:
            return pool is not None and pool.submit(os.getpid).result() > 0
        except (BrokenProcessPool, OSError, RuntimeError):
            with self._lock:
                self.broken = True
            return False

    @property
    def running(self) -> bool:
        """Whether the worker processes are started (a read ahead then costs no start-up)."""
        return self._pool is not None

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            spool, self._spool_dir = self._spool_dir, None
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


_ROW_POOL = RowPool()


def shared_pool() -> RowPool:
    """The process's one RowPool (the import's read ahead and its second pass use it in turn)."""
    return _ROW_POOL
