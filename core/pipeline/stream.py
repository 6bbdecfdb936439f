"""The driver's side of a Spark build that appends while the job runs: window by window, in archive order.

Each executor task, once every archive of a window is spooled, writes the window's manifest beside them and sends
the driver a datagram (core.pipeline.encode.publish_window). `WindowFeed` waits for each window in turn (the
datagram only wakes it; it reads the manifest, which lives in the spool folder the driver made) and hands its
archives to `ArchiveFolder.append`, which a `StreamingAppend` thread runs while the owner thread waits in the
job's collect(). So the append overlaps the encoding instead of following it.

What is trusted, and when: nothing the feed appends is described by the index until the whole Spark job has ended
without an error row and every window taken from a manifest equals the job's own collected rows (same chunks,
windows, message counts, files and piece hashes); only then does the feed end and the append write the index.
Until that moment the bytes in `data` are an append under way (`append.pending` names where it began), so any
failure, cancel or kill -9 loses nothing already archived: the append undoes them, or the next open of the folder
cuts them (core/archive/folder.py). A window with no manifest (an error, a lost datagram, a manifest that does not
check) is taken from the collected rows when the job ends; the datagrams only save waiting.
"""
from __future__ import annotations

import json
import re
import socket
import threading
from itertools import chain
from pathlib import Path
from typing import Callable, Iterator, Sequence

from core.archive.folder import ArchiveFolder, NewArchive
from core.pipeline.encode import NOTIFY_FILE, manifest_name, spool_name
from core.pipeline.spark_encode import EncodedArchives, PipelineError, archives_of

# Without a datagram (one lost, or a cluster whose executors cannot reach this address) the feed still looks for
# the next window's manifest this often, and at once when the job ends.
RECHECK_S = 1.0
_SPOOL_NAME = re.compile(r"\d{6}-\d{6}\.archive")


class JobEnded(Exception):
    """The Spark job failed or was cancelled: the feed stops, and the append undoes what it wrote."""


class WindowFeed:
    """The archives of a running job in archive order (an iterable for ArchiveFolder.append). The owner thread calls
    `finish(produced)` with the job's checked rows, or `fail()`, exactly once; `close()` at the end."""

    def __init__(self, spool: Path, windows: Sequence[tuple[int, int]], topics: Sequence[bytes], *,
                 host: str = "127.0.0.1", bind: str | None = None, check: Callable[[], None] | None = None,
                 recheck: float = RECHECK_S):
        self.spool = Path(spool)
        self.windows = [tuple(w) for w in windows]
        self.topics = tuple(topics)
        self._check = check
        self._recheck = recheck
        self._final: EncodedArchives | None = None
        self._failed = False
        self._ended = threading.Event()
        self._taken: dict[int, list[dict]] = {}   # windows handed over from their manifests
        self._bad: set[int] = set()               # manifests that did not check: wait for the collected rows
        try:
            self._sock = _bound(bind or host)
        except OSError:   # not an address of this machine (NAT without --driver-bind): no wake-ups, only rechecks
            host, self._sock = "127.0.0.1", _bound("127.0.0.1")
        try:
            self._address = self._sock.getsockname()[:2]
            tmp = self.spool / (NOTIFY_FILE + ".part")
            tmp.write_text(f"{host} {self._address[1]}")   # where the executors send (the driver's address)
            tmp.replace(self.spool / NOTIFY_FILE)
        except BaseException:
            self._sock.close()
            raise

    # -- the owner thread ----------------------------------------------------------------------------------
    def finish(self, produced: EncodedArchives) -> None:
        """The job ended and its rows passed check_rows."""
        self._final = produced
        self._end()

    def fail(self) -> None:
        self._failed = True
        self._end()

    def close(self) -> None:
        self._sock.close()

    def _end(self) -> None:
        self._ended.set()
        try:
            self._sock.sendto(b"end", self._address)
        except OSError:
            pass

    # -- the appending thread ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[NewArchive]:
        for w in range(len(self.windows)):
            yield from archives_of(self._window_rows(w), self.topics, self._check, unlink=True)
        self._ended.wait()   # the index is written only after the job has ended, and checked
        self._verify()

    def _window_rows(self, w: int) -> list[dict]:
        while True:
            if self._failed:
                raise JobEnded("the Spark job ended without archives")
            if w not in self._bad:
                rows = self._manifest(w)
                if rows is not None:
                    self._taken[w] = rows
                    return rows
            if self._final is not None:
                return self._final.window_rows(w)
            if self._check is not None:
                self._check()
            self._sock.settimeout(self._recheck)
            try:
                self._sock.recv(64)
            except (TimeoutError, socket.timeout):
                pass

    def _manifest(self, w: int) -> list[dict] | None:
        """Window `w`'s rows from its manifest, checked against what the driver planned; None if there is none
        yet (or it does not check: the window then comes from the collected rows)."""
        try:
            doc = json.loads((self.spool / manifest_name(w)).read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            self._bad.add(w)
            return None
        try:
            lo, hi = self.windows[w]
            rows = []
            _require(doc["window"] == w)
            for i, (chunk, start, end, messages, name, pieces) in enumerate(doc["archives"]):
                _require((chunk, start, end) == (i, lo, hi) and type(messages) is int and messages > 0)
                _require(name == spool_name(w, chunk) and _SPOOL_NAME.fullmatch(name) is not None)
                piece_hashes = bytes.fromhex(pieces)
                _require(len(piece_hashes) > 0 and len(piece_hashes) % 20 == 0)
                rows.append({"window": w, "chunk": chunk, "start": lo, "end": hi, "messages": messages, "raw": b"",
                             "error": None, "spool": str(self.spool / name), "pieces": piece_hashes})
            return rows
        except (KeyError, TypeError, ValueError):
            self._bad.add(w)
            return None

    def _verify(self) -> None:
        if self._failed or self._final is None:
            raise JobEnded("the Spark job ended without archives")
        for w, rows in self._taken.items():
            if [_key(r) for r in rows] != [_key(r) for r in self._final.window_rows(w)]:
                lo, hi = self.windows[w]
                raise PipelineError(f"window [{lo}, {hi}): the archives appended while the job ran are not the "
                                    "ones it returned", code="encode-mismatch")


def _bound(host: str) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, 0, type=socket.SOCK_DGRAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _require(ok: bool) -> None:
    if not ok:
        raise ValueError("manifest does not check")


def _key(r: dict) -> tuple:
    return (r["window"], r["chunk"], r["start"], r["end"], r["messages"], Path(r["spool"] or "").name,
            bytes(r["pieces"] or b""))


class StreamingAppend:
    """`folder.append(feed)` on a thread of its own. The folder is not touched before the first archive exists (as
    build_archives: nothing new, nothing written). `on_error` runs on that thread if the append fails for a reason
    of its own (a disk fault, a cancel between archives), e.g. to stop the Spark job early."""

    def __init__(self, folder: ArchiveFolder, feed: WindowFeed, on_error: Callable[[], None] | None = None):
        self.error: BaseException | None = None
        self._ids: list[str] = []
        self._folder, self._feed, self._on_error = folder, feed, on_error
        self._thread = threading.Thread(target=self._run, name="archivist-append", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            archives = iter(self._feed)
            first = next(archives, None)
            self._ids = [] if first is None else self._folder.append(chain([first], archives))
        except JobEnded:
            pass   # the owner thread raises the job's own error
        except BaseException as e:   # noqa: BLE001 - handed to the owner thread by result()
            self.error = e
            if self._on_error is not None:
                try:
                    self._on_error()
                except Exception:   # noqa: BLE001 - stopping the job early is only a saving
                    pass

    def join(self) -> None:
        self._thread.join()

    def result(self) -> list[str]:
        self.join()
        if self.error is not None:
            raise self.error
        return self._ids
