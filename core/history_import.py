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
"""
from __future__ import annotations

import atexit
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.errors import ArchiveError
from core.status.unwrap import Unwrapper, status_unwrap

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
    if u is None:      # not a Status message we can open: keep its place and raw payload
        return (community_id, h, m.timestamp, m.topic, m.sig or None, None, None, None, None, None, m.payload,
                archive_id)
    return (community_id, h, m.timestamp, m.topic, u.author or m.sig or None, u.chat_id, u.clock, u.message_id,
            u.message_type, u.text, m.payload, archive_id)


def archive_from_blob(aid: str, e: IndexEntry, blob: bytes, open_archive: ArchiveOpener | None = None
                      ) -> codec.DecodedArchive:
    """Check and decode `data[offset : offset + size]` of one archive: all bytes present, zero padding, decodes,
    and says the same window as its index entry. Raises ArchiveError (KeyMissing for a key not held)."""
    if len(blob) != e.size:
        raise ArchiveError(f"archive {aid} is not fully downloaded: data holds {len(blob)} of its {e.size} bytes",
                           code="archive-incomplete", archive_id=aid)
    if e.padding > e.size:
        raise ArchiveError(f"archive {aid}: padding {e.padding} is larger than its size {e.size}",
                           code="padding-exceeds-size", archive_id=aid)
    raw = blob[:e.size - e.padding]
    if raw.count(0) == len(raw):
        raise ArchiveError(f"archive {aid} is not downloaded (its bytes in data are all zeros)",
                           code="archive-incomplete", archive_id=aid)
    if blob[e.size - e.padding:].count(0) != e.padding:
        raise ArchiveError(f"archive {aid}: padding is not zeros", code="padding-nonzero", archive_id=aid)
    if open_archive is not None:
        raw = open_archive(raw)
    arch = codec.decode_archive(raw, archive_id=aid)
    if (arch.start, arch.end) != (e.start, e.end):
        raise ArchiveError(f"archive {aid} says [{arch.start}, {arch.end}), its index entry [{e.start}, {e.end})",
                           code="metadata-mismatch", archive_id=aid)
    return arch


def read_archive_rows(f, community_id: str, aid: str, e: IndexEntry, open_archive: ArchiveOpener | None = None,
                      unwrap: Unwrapper = status_unwrap) -> list[tuple]:
    """The history rows of one archive, read from the open `data` file `f`."""
    f.seek(e.offset)
    blob = f.read(e.size)
    return rows_of_messages(community_id, aid, archive_from_blob(aid, e, blob, open_archive).messages, unwrap)


def read_window_rows(data_path, community_id: str, index: Mapping[str, IndexEntry], w: WindowImport,
                     open_archive: ArchiveOpener | None = None, unwrap: Unwrapper = status_unwrap) -> list[tuple]:
    """All rows of a window's archives (the single-process path; Spark executors call read_archive_rows).

    The archives are checked and decoded here; turning their messages into rows (opening each Status message and
    recovering its signer: most of an import's CPU) is spread over worker processes when there are enough of them
    (RowPool). The rows, and their order, are the same either way."""
    decoded = []
    with open(data_path, "rb") as f:
        for a in w.archive_ids:
            e = index[a]
            f.seek(e.offset)
            decoded.append((a, archive_from_blob(a, e, f.read(e.size), open_archive).messages))
    out: list[tuple] = []
    for a, messages in decoded:
        out.extend(_ROW_POOL.rows(community_id, a, messages, unwrap))
    return out


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
        self.broken = False

    def _executor(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and not self.broken:
                ctx = multiprocessing.get_context("forkserver")
                self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
                atexit.register(self.shutdown)
            return self._pool

    def rows(self, community_id: str, aid: str, messages: Sequence[ArchiveMessage],
             unwrap: Unwrapper = status_unwrap) -> list[tuple]:
        if (self.workers < 2 or len(messages) < self.MIN_MESSAGES or unwrap is not status_unwrap or self.broken
                or multiprocessing.current_process().daemon):      # a daemonic process may not have children
            return rows_of_messages(community_id, aid, messages, unwrap)
        pool = self._executor()
        if pool is None:
            return rows_of_messages(community_id, aid, messages, unwrap)
        chunks = [[m.payload for m in messages[i:i + self.CHUNK]] for i in range(0, len(messages), self.CHUNK)]
        try:
            opened = [u for part in pool.map(unwrap_payloads, chunks) for u in part]
        except (BrokenProcessPool, OSError, RuntimeError, AssertionError):
            # a worker died or could not start: never lose the import over it, do it here
            with self._lock:
                self.broken = True
            return rows_of_messages(community_id, aid, messages, unwrap)
        return [row_of(community_id, m, aid, u) for m, u in zip(messages, opened, strict=True)]

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_ROW_POOL = RowPool()
