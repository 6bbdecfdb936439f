"""The Log view under a long run (pytest-qt, offscreen): 20,000 events into the real LogView. Appending is one
insert at the end; the oldest rows go from the front in batches, in order; the filter proxy is never invalidated
by an event; the view follows the newest row (the last sentence is what is on screen) unless the reader scrolled
up; the raw JSON of a row still names its own event after the front moved. Also: Qt calls keep the reference
counts of None and True (PySide6 6.12.0 lost one per call on Python 3.11 and aborted the process at about this
size; pyproject.toml pins 6.11.3)."""
from __future__ import annotations

import json
import sys

import pytest
from PySide6.QtCore import QPoint

from core.node import events as E
from gui.models import Column, RingTableModel
from gui.views.log import MAX_ROWS, LogView

CID = "0x02" + "ab" * 32
EVENTS = 20_000


def _sentence(i: int) -> str:
    return f"Waiting for event number {i:05d}"


def _feed(log: LogView, first: int, last: int) -> None:
    for i in range(first, last + 1):
        log.add(E.WAITING, CID, {"reason": f"waiting for event number {i:05d}", "n": i}, at=1_760_000_000 + i)


@pytest.fixture
def log(qtbot):
    v = LogView()
    v.resize(900, 500)
    qtbot.addWidget(v)
    v.show()
    qtbot.waitExposed(v)
    return v


def _bottom_sentence(log: LogView) -> str | None:
    vp = log.view.viewport()
    idx = log.view.indexAt(QPoint(10, vp.height() - 3))
    if not idx.isValid():       # the last row ends above the viewport's bottom edge
        idx = log.view.indexAt(QPoint(10, log.view.rowViewportPosition(log.proxy.rowCount() - 1) + 2))
    return log.proxy.data(log.proxy.index(idx.row(), 2)) if idx.isValid() else None


def test_twenty_thousand_events_keep_the_newest_in_order_and_show_the_last(qtbot, log):
    signals = {"reset": 0, "layout": 0, "removed": []}
    log.model.modelReset.connect(lambda: signals.__setitem__("reset", signals["reset"] + 1))
    log.proxy.layoutChanged.connect(lambda *a: signals.__setitem__("layout", signals["layout"] + 1))
    log.model.rowsRemoved.connect(lambda _p, lo, hi: signals["removed"].append((lo, hi)))
    for start in range(1, EVENTS + 1, 1000):          # the event loop runs between bursts, as in the window
        _feed(log, start, start + 999)
        qtbot.wait(1)

    m, drop = log.model, log.model.drop
    n = m.rowCount()
    assert MAX_ROWS <= n < MAX_ROWS + drop                      # bounded: the newest MAX_ROWS and at most a batch
    assert [r[0] for r in m.rows()] == list(range(EVENTS - n + 1, EVENTS + 1))   # the newest, oldest first
    assert m.row(0)[5] == _sentence(EVENTS - n + 1) and m.row(-1)[5] == _sentence(EVENTS)
    assert m.dropped == EVENTS - n
    # the oldest went from the front, a batch at a time, never one row per event, and nothing re-indexed it all
    assert signals["removed"] and all(lo == 0 and hi == drop - 1 for lo, hi in signals["removed"])
    assert len(signals["removed"]) == (EVENTS - n) // drop
    assert signals["reset"] == 0 and signals["layout"] == 0
    assert log.proxy.rowCount() == n
    # on screen: the view followed the newest row
    qtbot.waitUntil(lambda: _bottom_sentence(log) == _sentence(EVENTS), timeout=2000)

    # a filter sees only kept rows, and a new matching event joins it without a re-filter
    log.search.setText("number 19999")
    assert log.proxy.rowCount() == 1
    assert log.proxy.data(log.proxy.index(0, 2)) == _sentence(19999)
    log.search.setText(f"number {EVENTS - n - 5:05d}")           # dropped: gone for good
    assert log.proxy.rowCount() == 0
    log.search.setText("number 2000")                           # 20000..20009 once they exist
    assert log.proxy.rowCount() == 1
    layouts = signals["layout"]
    _feed(log, EVENTS + 1, EVENTS + 3)
    assert log.proxy.rowCount() == 4 and signals["layout"] == layouts
    log.search.clear()
    assert log.proxy.rowCount() == m.rowCount()


def test_the_view_stays_where_the_reader_scrolled(qtbot, log):
    _feed(log, 1, 300)
    qtbot.waitUntil(lambda: _bottom_sentence(log) == _sentence(300), timeout=2000)
    log.view.scrollToTop()
    top = log.view.indexAt(QPoint(10, 3))
    assert log.proxy.data(log.proxy.index(top.row(), 2)) == _sentence(1)
    _feed(log, 301, 400)
    qtbot.wait(120)                                             # longer than the follow interval
    top = log.view.indexAt(QPoint(10, 3))
    assert log.proxy.data(log.proxy.index(top.row(), 2)) == _sentence(1)     # not pulled to the bottom
    log.view.scrollToBottom()
    _feed(log, 401, 450)
    qtbot.waitUntil(lambda: _bottom_sentence(log) == _sentence(450), timeout=2000)


def test_raw_json_names_its_own_event_after_the_front_moved(qtbot):
    log = LogView(max_rows=100)
    qtbot.addWidget(log)
    log.show()
    _feed(log, 1, 1000)
    assert log.model.row(0)[0] > 900
    log.show_raw(True)
    log.view.selectRow(10)
    shown = json.loads(log.json.toPlainText())
    expect = log.model.row(10)
    assert shown["n"] == expect[0] and shown["event"] == E.WAITING
    assert log.proxy.data(log.proxy.index(10, 2)) == _sentence(expect[0])
    log.model.clear()
    assert log.model.rowCount() == 0 and log.proxy.rowCount() == 0
    _feed(log, 1001, 1001)
    assert log.model.rows()[0][5] == _sentence(1001)


def test_ring_model_drops_in_batches_and_frees_the_dropped_rows():
    m = RingTableModel([Column("n", lambda r: r[0])], key=lambda r: r[0], capacity=10, drop=3)
    for i in range(1, 13):
        m.append((i,))
        assert m.rowCount() == i and m.dropped == 0             # up to capacity + drop - 1 rows
    m.append((13,))
    assert [r[0] for r in m.rows()] == list(range(4, 14))       # the 3 oldest went at once
    assert m.dropped == 3 and m.data(m.index(0, 0)) == "4" and m.row(-1) == (13,)
    for i in range(14, 1000):
        m.append((i,))
        assert 10 <= m.rowCount() < 13
        assert m.row(-1) == (i,) and m.row(0)[0] == i - m.rowCount() + 1
    assert len(m._buf) < 2 * 13                                  # compacted: dead slots never pile up
    assert sum(r is None for r in m._buf[:m._head]) == m._head   # dropped rows are not held
    with pytest.raises(IndexError):
        m.row(m.rowCount())
    with pytest.raises(ValueError):
        RingTableModel([], key=id, capacity=0)


def test_qt_calls_keep_the_reference_counts_of_none_and_true():
    """PySide6 6.12.0 (abi3 wheels) on Python 3.11 lost a reference to None per call of a method returning nothing
    and to True per Signal.emit: "Fatal Python error: none_dealloc" after some thousands of calls. The pinned
    version must not drift."""
    from PySide6.QtCore import QObject, Signal

    class Emitter(QObject):
        fired = Signal(int)

    o = Emitter()
    o.fired.connect(lambda _v: None)
    counts = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(3_000):
        o.setObjectName("x")
        o.fired.emit(1)
    drift = sys.getrefcount(None) - counts[0], sys.getrefcount(True) - counts[1]
    assert abs(drift[0]) < 100 and abs(drift[1]) < 100, drift
