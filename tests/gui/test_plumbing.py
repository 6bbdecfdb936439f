"""Plumbing: keyed table updates, background operations (GUI-thread callbacks, per-key order), and the adapter
that carries engine events from any thread to the GUI thread."""
from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass

from PySide6.QtCore import QThread

from core.node.events import EventBus, WAITING
from gui.models import Column, KeyedTableModel


@dataclass(frozen=True)
class Row:
    key: str
    value: int


def make_model():
    return KeyedTableModel([Column("k", lambda r: r.key), Column("v", lambda r: r.value)], key=lambda r: r.key)


def test_keyed_model_updates_rows_in_place(qtbot):
    m = make_model()
    m.replace_all([Row(str(i), i) for i in range(10)])
    changed, reset = [], []
    m.dataChanged.connect(lambda a, b: changed.append((a.row(), b.row())))
    m.modelReset.connect(lambda: reset.append(1))
    m.replace_all([Row(str(i), i + (100 if i == 3 else 0)) for i in range(10)])
    assert changed == [(3, 3)] and not reset
    assert m.data(m.index(3, 1)) == "103"
    m.upsert(Row("x", 1))
    assert m.rowCount() == 11 and m.row_of("x") == 10
    m.remove("0")
    assert m.row_of("x") == 9 and m.get("0") is None
    m.replace_all([Row(str(i), -i) for i in range(1, 10)] + [Row("x", 1)])   # > half changed: one signal
    assert changed[-1] == (0, 9) and not reset
    m.replace_all([Row(f"n{i}", i) for i in range(10)])                     # all new keys: one reset
    assert reset == [1] and m.row_of("n5") == 5


def test_operations_call_back_on_gui_thread_in_key_order(qtbot, ops):
    gui_thread = QThread.currentThread()
    seen, threads = [], []
    gate = threading.Event()

    def slow(ctx):
        gate.wait(10)
        return "first"
    done = []
    ops.run(slow, on_done=lambda v: (seen.append(v), threads.append(QThread.currentThread())), key="c1")
    ops.run(lambda ctx: "second", on_done=lambda v: (seen.append(v), done.append(1)), key="c1")
    err = []
    ops.run(lambda ctx: 1 / 0, on_error=err.append)
    qtbot.waitUntil(lambda: bool(err), timeout=5000)
    assert seen == []                       # "second" waits behind "first" (same community)
    gate.set()
    qtbot.waitUntil(lambda: bool(done), timeout=5000)
    assert seen == ["first", "second"] and threads == [gui_thread]
    assert isinstance(err[0], ZeroDivisionError)


class BusOnlyEngine:
    """The smallest engine-shaped object: a real EventBus and snapshot/command methods."""

    def __init__(self):
        self.bus = EventBus()
        self.calls = 0

    def communities(self):
        self.calls += 1
        return []

    def archive_now(self, cid):
        f = Future()
        threading.Thread(target=lambda: f.set_result({"new_archive_ids": ["a", "b"]})).start()
        return f


def test_adapter_delivers_events_on_gui_thread_in_order(qtbot, ops):
    from gui.adapter import EngineAdapter
    eng = BusOnlyEngine()
    adapter = EngineAdapter(eng, ops)
    got, threads = [], []
    adapter.event.connect(lambda e: (got.append(e.data["n"]), threads.append(QThread.currentThread())))
    waits = []
    adapter.waiting.connect(lambda cid, reason: waits.append((cid, reason)))

    def publisher():
        for n in range(50):
            eng.bus.publish(WAITING, "c", reason=f"r{n}", n=n)
    t = threading.Thread(target=publisher)
    t.start()
    t.join()
    qtbot.waitUntil(lambda: len(got) == 50, timeout=5000)
    assert got == list(range(50)) and set(threads) == {QThread.currentThread()}
    assert waits[-1] == ("c", "r49")
    qtbot.waitUntil(lambda: eng.calls >= 1, timeout=5000)   # events trigger a (coalesced) snapshot refresh
    assert eng.calls < 50
    result = []
    adapter.call("archive now", "archive_now", "c", on_done=result.append)
    qtbot.waitUntil(lambda: bool(result), timeout=5000)
    assert result == [{"new_archive_ids": ["a", "b"]}]
    failed = []
    adapter.failed.connect(lambda what, text: failed.append((what, text)))
    adapter.call("archive now", "no_such_command", "c")
    qtbot.waitUntil(lambda: bool(failed), timeout=5000)
    assert failed[0][0] == "archive now" and "AttributeError" in failed[0][1]
    adapter.close()
