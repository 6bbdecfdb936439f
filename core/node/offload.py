"""CPU-heavy engine steps (the archive build, a window's import) in a worker process of our own.

Why: the engine's threads share the GIL with the window's GUI thread. A build (encode, SHA-1, protobuf) or an
import (decode, public-key recovery, SQLite) held it for up to 160 ms at a time and the window stalled. In a worker
process they hold their own GIL; the engine thread that asked waits on a pipe (in C, without the GIL).

One code path: the worker runs the very functions the engine runs in process (`core.node.control.build_job`,
`core.node.hydrate.hydrate_job`); nothing of the rules is copied here.

Crash semantics: the work is crash safe by itself (the folder's data is fsynced before its index is atomically
replaced; a window's rows and its "imported" record are one transaction), so a worker killed at any point leaves
what a node killed at that point leaves, and the next run repairs or redoes it. `run` then raises WorkerDied.
Cancelling (`cancel` event) kills the worker for the same reason. A worker never outlives the process that started
it: the kernel kills it when its parent dies (PR_SET_PDEATHSIG, set up by a thread that lives as long as the
Offloader), and a watchdog thread exits when the parent's end of a lifeline pipe closes.

Workers are fresh interpreters (`python -c`, never `fork`: the parent is threaded), one per job running at once,
kept idle between jobs (`keep` of them), `nice` steps below the parent and with batch scheduling (SCHED_BATCH) so
that the window's threads come first. Engines share one Offloader per process (`Offloader.shared()`).
"""
from __future__ import annotations

import itertools
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections import Counter
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable

from core.archive.errors import ArchiveError

log = logging.getLogger(__name__)
PRELOAD = ("core.archive.build", "core.archive.columnar", "core.history_import", "core.storage.member_history")


class WorkerDied(ArchiveError):
    """The worker process ended before it answered (killed, out of memory, cancelled). What it was writing is in
    the state a crash at that point leaves; the next run continues."""

    code = "worker-died"


class JobCancelled(WorkerDied):
    code = "cancelled"


class RemoteError(Exception):
    """An exception from the worker that could not be sent back as itself (its text and traceback are)."""


# ---- the worker process ---------------------------------------------------------------------------------------

def _die_with_parent(lifeline: int) -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.read(lifeline, 1):        # b"" (EOF) once the parent is gone, whatever killed it
            pass
        os._exit(70)
    threading.Thread(target=watch, name="offload-watchdog", daemon=True).start()


def _child_main() -> None:
    """`python -c` entry of a worker: argv = [conn fd, lifeline fd, nice, preload...]."""
    import importlib
    conn_fd, life_fd, nice, *preload = sys.argv[1:]
    _die_with_parent(int(life_fd))
    try:        # batch scheduling: the kernel does not let this worker preempt the window's threads when they wake
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        pass
    if int(nice):
        try:
            os.nice(int(nice))
        except OSError:
            pass
    conn = Connection(int(conn_fd))
    for name in preload:
        importlib.import_module(name)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        fn, args, kwargs, progress = msg
        if progress:
            kwargs = {**kwargs, "report": lambda *a: conn.send(("progress", a))}
        try:
            reply = ("ok", fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - sent back to the caller, who raises it
            reply = ("err", e, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception:  # noqa: BLE001 - the error (or result) does not pickle: send its text
            conn.send(("err", RemoteError(f"{type(reply[1]).__name__}: {reply[1]}"), traceback.format_exc()))


# ---- the parent side --------------------------------------------------------------------------------------------

class _Worker:
    """A worker process started with `python -c` (not multiprocessing's spawn, which would import the parent's
    __main__ again): a socket pair for jobs, and a lifeline pipe whose write end only this process holds."""

    def __init__(self, nice: int, preload: tuple[str, ...]):
        ours, theirs = socket.socketpair()
        life_r, self._life_w = os.pipe()
        root = str(Path(__file__).resolve().parents[2])         # the folder that holds the `core` package
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from core.node.offload import _child_main; _child_main()",
                 str(theirs.fileno()), str(life_r), str(nice), *preload],
                pass_fds=(theirs.fileno(), life_r), env=env, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
            os.close(life_r)
        self.conn = Connection(ours.detach())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exitcode(self) -> int | None:
        try:
            return self.proc.wait(5)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.conn.close()
        if self._life_w is not None:
            os.close(self._life_w)
            self._life_w = None


class Offloader:
    """`run(fn, *args, **kwargs)` calls the module-level function `fn` in a worker process and returns its result
    (or raises its exception). Blocks the calling (engine) thread, not the GIL. Thread safe."""

    _shared: "Offloader | None" = None
    _shared_users = 0
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> "Offloader":
        """The process's one Offloader for engines (the demo's owner and member share its worker); give it back
        with release()."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            cls._shared_users += 1
            return cls._shared

    def release(self) -> None:
        """An engine is done with it: the shared Offloader closes when its last engine stops (others: close)."""
        with Offloader._shared_lock:
            if self is Offloader._shared:
                Offloader._shared_users -= 1
                if Offloader._shared_users > 0:
                    return
                Offloader._shared = None
        self.close()

    def __init__(self, nice: int = 5, keep: int = 1, preload: tuple[str, ...] = PRELOAD):
        self.nice, self.keep, self.preload = nice, keep, tuple(preload)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self._spawns: queue.Queue = queue.Queue()
        self._spawner: threading.Thread | None = None
        self._warming: Future | None = None  # the worker warm() asked for, until a job or the idle list takes it
        self.started = 0                     # workers started so far (tests, figures)
        self.pids: dict[int, int] = {}       # job number -> pid of the worker running it (tests kill it)
        self.done: Counter = Counter()       # function name -> jobs that answered (tests, figures)
        self._jobs = itertools.count(1)

    # the worker's parent thread must live as long as we do (PR_SET_PDEATHSIG fires when that thread ends)
    def _spawn_loop(self) -> None:
        while True:
            fut = self._spawns.get()
            if fut is None:
                return
            try:
                fut.set_result(_Worker(self.nice, self.preload))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                fut.set_exception(e)

    def _request(self) -> Future:
        """Ask the spawner thread for a worker; the Future gets it (or the error). Call with the lock held."""
        if self._closed:
            raise WorkerDied("the engine is stopping: no new worker process")
        if self._spawner is None:
            self._spawner = threading.Thread(target=self._spawn_loop, name="offload-spawner", daemon=True)
            self._spawner.start()
        fut: Future = Future()
        self._spawns.put(fut)
        self.started += 1
        return fut

    def _take(self) -> _Worker:
        """An idle worker, else the one warm() is starting (a job right after warm() waits for it instead of
        starting a second interpreter), else a new one."""
        with self._lock:
            while self._idle:
                w = self._idle.pop()
                if w.alive():
                    return w
                w.kill()
            warming, self._warming = self._warming, None
        if warming is not None:
            try:
                w = warming.result()
            except Exception:  # noqa: BLE001 - the warm-up failed: this job starts one, as without warm()
                w = None
            if w is not None and w.alive():
                return w
            if w is not None:
                w.kill()
        with self._lock:
            fut = self._request()
        return fut.result()

    def _give_back(self, w: _Worker) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.keep and w.alive():
                self._idle.append(w)
                return
        self._stop(w)

    def warm(self) -> None:
        """Start a worker now (in the background) so that the first job does not wait for Python to start."""
        with self._lock:
            if self._idle or self.started or self._closed:
                return
            fut = self._warming = self._request()

        def ready(f: Future) -> None:    # on the spawner thread: idle, unless a job took it meanwhile
            with self._lock:
                if self._warming is not f:
                    return
                self._warming = None
            if f.exception() is not None:
                log.info("offload worker warm-up failed: %s", f.exception())   # the first job starts one instead
            else:
                self._give_back(f.result())
        fut.add_done_callback(ready)

    def run(self, fn: Callable[..., Any], *args: Any, progress: Callable[..., None] | None = None,
            cancel: threading.Event | None = None, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)` in a worker; with `progress`, fn gets `report=` and each report(*a) reaches
        progress(*a) on this thread. A set `cancel` kills the worker (JobCancelled)."""
        job = next(self._jobs)
        w = self._take()
        self.pids[job] = w.proc.pid
        try:
            try:
                w.conn.send((fn, args, kwargs, progress is not None))
            except (BrokenPipeError, ConnectionError) as e:     # it died while idle: as a death mid-job
                raise WorkerDied(f"the worker process ended before it took {getattr(fn, '__name__', 'a job')}: "
                                 f"{e}") from None
            while True:
                ready = wait([w.conn], timeout=0.1 if cancel is not None else None)
                if cancel is not None and cancel.is_set():
                    w.kill()
                    raise JobCancelled(f"{getattr(fn, '__name__', 'job')} cancelled: its worker was stopped")
                if w.conn in ready:
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):        # its end closed: the worker is gone
                        msg = None
                    if msg is not None and msg[0] == "progress":
                        progress(*msg[1])          # type: ignore[misc]
                        continue
                    if msg is not None:
                        break
                    code = w.exitcode()
                    w.kill()
                    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                    raise WorkerDied(f"the worker process running {getattr(fn, '__name__', 'a job')} ended "
                                     f"({how}); what it wrote is as a crash at that point leaves it, and the "
                                     "next run continues")
        except BaseException:
            self.pids.pop(job, None)
            w.kill()              # mid-job (cancelled, died, or the job could not be sent): never reused
            raise
        self.pids.pop(job, None)
        self._give_back(w)
        self.done[getattr(fn, "__name__", str(fn))] += 1
        if msg[0] == "ok":
            return msg[1]
        err = msg[1]
        log.debug("offloaded %s failed in the worker:\n%s", getattr(fn, "__name__", fn), msg[2])
        raise err

    def _stop(self, w: _Worker) -> None:
        try:
            w.conn.send(None)
            w.exitcode()
        except (OSError, ValueError):
            pass
        w.kill()

    def close(self) -> None:
        """Stop the idle workers (a running job's caller is waited for by its engine queue first)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            spawner = self._spawner
        for w in idle:
            self._stop(w)
        if spawner is not None:
            self._spawns.put(None)
            spawner.join(5)


class _EitherSet:
    """is_set() of any of the events given (None ones skipped): what Offloader.run polls as its `cancel`."""

    def __init__(self, *events: "threading.Event | None"):
        self.events = [e for e in events if e is not None]

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


class StoppingWith:
    """An engine's view of the (shared) Offloader: every job it runs is cancelled once `stopped` is set.

    Why: the engine's stop waits for the job that its community queue is running. A build, a window's import or
    the authors pass (minutes at 1M messages) would keep Quit waiting that long, and the window's process alive
    after its window closed. Killing the worker is what a crash at that point does, which each job survives by
    design (see the module's docstring): the next start finishes it."""

    def __init__(self, offloader: Offloader, stopped: threading.Event):
        self.offloader, self.stopped = offloader, stopped

    def run(self, fn: Callable[..., Any], *args: Any, progress: Callable[..., None] | None = None,
            cancel: threading.Event | None = None, **kwargs: Any) -> Any:
        if self.stopped.is_set():
            raise JobCancelled(f"{getattr(fn, '__name__', 'job')} not started: the engine is stopping")
        return self.offloader.run(fn, *args, progress=progress, cancel=_EitherSet(cancel, self.stopped), **kwargs)

    def __getattr__(self, name: str) -> Any:    # done, pids, started, warm, release ...: the Offloader's own
        return getattr(self.offloader, name)
