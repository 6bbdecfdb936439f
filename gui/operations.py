"""Background operations (Anki's shape): every slow call runs on a QThreadPool, never on the GUI thread.

`Operations.run(fn, on_done=..., on_error=..., key=...)` runs `fn(ctx)` on a worker thread. Callbacks always run
on the GUI thread: the worker emits a signal of this (GUI-thread) object through a queued connection.
Operations sharing a `key` (a community ID, like Vorta's per-repository queue) run one after another.
"""
from __future__ import annotations

import itertools
import threading
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot


@dataclass
class OpContext:
    """Handed to the worker function: a cancel flag and a progress reporter (thread-safe)."""

    op_id: int
    label: str
    cancelled: threading.Event = field(default_factory=threading.Event)
    report: Callable[[int, int, str], None] = lambda done, total, text="": None

    def check(self) -> None:
        if self.cancelled.is_set():
            raise OperationCancelled(self.label)


class OperationCancelled(Exception):
    pass


@dataclass
class _Pending:
    ctx: OpContext
    fn: Callable[[OpContext], Any]
    on_done: Callable[[Any], None] | None
    on_error: Callable[[BaseException], None] | None
    on_progress: Callable[[int, int, str], None] | None
    key: str | None


class _Runnable(QRunnable):
    def __init__(self, owner: "Operations", pending: _Pending):
        super().__init__()
        self.owner, self.pending = owner, pending

    def run(self) -> None:  # worker thread
        p = self.pending
        try:
            value = p.fn(p.ctx)
        except BaseException as e:  # noqa: BLE001 - delivered to on_error on the GUI thread
            e.__archivist_traceback__ = traceback.format_exc()  # type: ignore[attr-defined]
            self.owner._finished.emit(p.ctx.op_id, False, e)
        else:
            self.owner._finished.emit(p.ctx.op_id, True, value)


class Operations(QObject):
    started = Signal(int, str)        # op id, label
    finished = Signal(int, str, bool)  # op id, label, ok
    _finished = Signal(int, bool, object)
    _progress = Signal(int, int, int, str)

    def __init__(self, parent: QObject | None = None, max_threads: int = 4):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self._ids = itertools.count(1)
        self._running: dict[int, _Pending] = {}
        self._queues: dict[str, deque[_Pending]] = {}
        self._finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)
        self._progress.connect(self._on_progress, Qt.ConnectionType.QueuedConnection)

    def run(self, fn: Callable[[OpContext], Any], *, on_done: Callable[[Any], None] | None = None,
            on_error: Callable[[BaseException], None] | None = None,
            on_progress: Callable[[int, int, str], None] | None = None,
            key: str | None = None, label: str = "") -> OpContext:
        op_id = next(self._ids)
        ctx = OpContext(op_id, label or getattr(fn, "__name__", "operation"))
        ctx.report = lambda done, total, text="": self._progress.emit(op_id, done, total, text)
        pending = _Pending(ctx, fn, on_done, on_error, on_progress, key)
        if key is not None and key in self._queues:
            self._queues[key].append(pending)          # wait behind the running one of this key
        else:
            if key is not None:
                self._queues[key] = deque()
            self._start(pending)
        return ctx

    def _start(self, p: _Pending) -> None:
        self._running[p.ctx.op_id] = p
        self.started.emit(p.ctx.op_id, p.ctx.label)
        self.pool.start(_Runnable(self, p))

    @Slot(int, bool, object)
    def _on_finished(self, op_id: int, ok: bool, value: object) -> None:
        p = self._running.pop(op_id, None)
        if p is None:
            return
        try:
            if ok and p.on_done:
                p.on_done(value)
            elif not ok and p.on_error:
                p.on_error(value)  # type: ignore[arg-type]
        finally:
            self.finished.emit(op_id, p.ctx.label, ok)
            if p.key is not None:
                q = self._queues.get(p.key)
                if q:
                    self._start(q.popleft())
                else:
                    self._queues.pop(p.key, None)

    @Slot(int, int, int, str)
    def _on_progress(self, op_id: int, done: int, total: int, text: str) -> None:
        p = self._running.get(op_id)
        if p is not None and p.on_progress:
            p.on_progress(done, total, text)

    def busy(self) -> bool:
        return bool(self._running)

    def cancel_all(self) -> None:
        for p in self._running.values():
            p.ctx.cancelled.set()
        for q in self._queues.values():
            q.clear()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel and wait for workers (used on window close and in test teardown)."""
        self.cancel_all()
        return self.pool.waitForDone(timeout_ms)
