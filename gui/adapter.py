"""Engine -> Qt (Electrum's shape): the engine knows nothing of Qt; this adapter subscribes to its EventBus and
re-emits every event on the GUI thread through a queued connection, refreshes state snapshots off the GUI
thread (after events, coalesced, and about once a second: seeding stats change without events), and turns the
engine's concurrent.futures.Future results into GUI-thread callbacks.

The engine is duck-typed (core.node.engine.Engine): `.bus`, `.communities()`, and Future-returning commands.
"""
from __future__ import annotations

import itertools
from concurrent.futures import Future
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

from core.node import events as ev
from core.node.events import Event
from gui.operations import Operations


class EngineAdapter(QObject):
    event = Signal(object)                 # every core Event, on the GUI thread, in publish order
    communities_changed = Signal(list)     # list[CommunityState] snapshot
    waiting = Signal(str, str)             # community id, reason ("" when no longer waiting)
    progress = Signal(str, object)         # community id, event data {"job", "done", "total", ...}
    failed = Signal(str, str)              # what, error text (command failures and ERROR events)
    _incoming = Signal(object)
    _future_done = Signal(int, object)

    def __init__(self, engine: Any, ops: Operations, parent: QObject | None = None, refresh_ms: int = 200,
                 live_ms: int = 1000):
        super().__init__(parent)
        self.engine, self.ops = engine, ops
        self.snapshot: list = []
        self._calls: dict[int, tuple[str, Callable | None, Callable | None]] = {}
        self._ids = itertools.count(1)
        self._incoming.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._future_done.connect(self._on_future, Qt.ConnectionType.QueuedConnection)
        self._refresh_timer = QTimer(self)       # coalesce bursts of events into one snapshot refresh
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(refresh_ms)
        self._refresh_timer.timeout.connect(self._refresh_now)
        self._refreshing = False
        self._again = False
        self._last_error: str | None = None
        self._sent = False                       # a snapshot was emitted (the first one always is, even empty)
        # Seeding peers and uploaded bytes change without any engine event (libtorrent's status): poll the snapshot
        # about once a second as well, so no view is more than ~1 s behind and a failed refresh heals by itself.
        self._live_timer = QTimer(self)
        self._live_timer.setInterval(live_ms)
        self._live_timer.timeout.connect(self.refresh)
        if live_ms > 0:
            self._live_timer.start()
        self._unsubscribe = engine.bus.subscribe(self._on_core_event)

    # -- events (any thread -> GUI thread) -----------------------------------------------------------------
    def _on_core_event(self, e: Event) -> None:   # runs on the publishing (engine) thread: must not block
        self._incoming.emit(e)

    @Slot(object)
    def _dispatch(self, e: Event) -> None:
        self.event.emit(e)
        cid = e.community_id or ""
        if e.name == ev.WAITING:
            self.waiting.emit(cid, str(e.data.get("reason", "")))
        elif e.name == ev.PROGRESS:
            self.progress.emit(cid, dict(e.data))
        elif e.name == ev.ERROR:
            self.failed.emit(cid, str(e.data.get("error") or e.data.get("message") or e.data))
        self.refresh()

    # -- snapshots -------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        if not self._refresh_timer.isActive():
            self._refresh_timer.start()

    def refresh_now(self) -> None:
        self._refresh_now()

    def _refresh_now(self) -> None:
        if self._refreshing:
            self._again = True
            return
        self._refreshing = True
        self.ops.run(lambda ctx: list(self.engine.communities()), on_done=self._snapshot_done,
                     on_error=self._snapshot_failed, key="engine-snapshot", label="refresh communities")

    def _snapshot_done(self, states: list) -> None:
        self._refreshing = False
        healed, self._last_error = self._last_error is not None, None
        # the views redraw on every emit (tens of ms on the GUI thread): the once-a-second poll and the refreshes
        # after events often bring the same values, which are not sent again
        if states != self.snapshot or healed or not self._sent:
            self._sent = True
            self.snapshot = states
            self.communities_changed.emit(states)
        if self._again:
            self._again = False
            self.refresh()

    def _snapshot_failed(self, err: BaseException) -> None:
        self._refreshing = False
        if str(err) != self._last_error:      # polled every second: say it once, not once a second
            self._last_error = str(err)
            self.failed.emit("refresh", str(err))
        if self._again:           # a refresh asked for meanwhile is not lost with the failed one
            self._again = False
            self.refresh()

    def community(self, community_id: str):
        return next((c for c in self.snapshot if c.community_id == community_id), None)

    # -- commands --------------------------------------------------------------------------------------------
    def call(self, what: str, method: str, *args: Any, on_done: Callable[[Any], None] | None = None,
             on_error: Callable[[BaseException], None] | None = None, **kwargs: Any) -> None:
        """Call an engine command (which returns a Future at once) and get its result on the GUI thread."""
        token = next(self._ids)
        self._calls[token] = (what, on_done, on_error)
        try:
            fut = getattr(self.engine, method)(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - a refused command is shown, never crashes the window
            fut = Future()
            fut.set_exception(e)
        if not isinstance(fut, Future):       # tolerate a synchronous result
            done = Future()
            done.set_result(fut)
            fut = done
        fut.add_done_callback(lambda f: self._future_done.emit(token, f))

    @Slot(int, object)
    def _on_future(self, token: int, fut: Future) -> None:
        what, on_done, on_error = self._calls.pop(token, ("?", None, None))
        err = fut.exception()
        if err is None:
            if on_done:
                on_done(fut.result())
        else:
            self.failed.emit(what, f"{type(err).__name__}: {err}")
            if on_error:
                on_error(err)
        self.refresh()

    def close(self) -> None:
        self._unsubscribe()
        self._refresh_timer.stop()
        self._live_timer.stop()
