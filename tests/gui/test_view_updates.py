"""What the views do on the GUI thread when the engine reports (issue 15's stalls), offscreen: progress bars never
paint inside a setter and take on at most one value per interval (the latest); the member table tells its view
only about the rows whose cells changed; the History view opens its search index on its worker thread; the
member view's first snapshot imports nothing on the GUI thread. The timings themselves are in
tests/bench/test_gui_stall_bench.py."""
from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QProgressBar, QVBoxLayout, QWidget

from core.node import events as E
from core.node.community import NodePaths
from core.node.events import Event
from core.node.state import ArchiveInfo, CommunityState, DownloadPolicy, DownloadProgress, Role
from gui.views.member import MemberView
from gui.views.progress import SmoothBar
from tests.gui.test_history_words import CID as HCID, history_db  # noqa: F401  (a fixture)

WEEK = 7 * 86400
T0 = 1_700_000_000 // WEEK * WEEK
CID = "0x02" + "ab" * 32
CHOSEN, STATE, PROGRESS = 5, 6, 7


class Paints(QObject):
    def __init__(self, w):
        super().__init__()
        self.n = 0
        w.installEventFilter(self)

    def eventFilter(self, obj, e) -> bool:
        if e.type() == QEvent.Type.Paint:
            self.n += 1
        return False


def _shown(qtbot, bar):
    """The bar in a shown window (offscreen, a top-level bar alone is never painted), painted once."""
    top = QWidget()
    QVBoxLayout(top).addWidget(bar)
    qtbot.addWidget(top)
    top.resize(300, 60)
    paints = Paints(bar)
    top.show()
    qtbot.waitExposed(top)
    qtbot.waitUntil(lambda: paints.n > 0)
    paints.top = top                 # the window lives as long as the counter
    return paints


def test_a_plain_progress_bar_paints_inside_set_value(qtbot):
    """The stall being avoided, on this platform: QProgressBar.setValue paints on the caller's stack."""
    bar = QProgressBar()
    paints = _shown(qtbot, bar)
    before = paints.n
    bar.setValue(40)
    assert paints.n > before


def test_smooth_bar_never_paints_in_a_setter_and_shows_the_latest_value(qtbot):
    bar = SmoothBar()
    paints = _shown(qtbot, bar)
    qtbot.waitUntil(lambda: not bar._timer.isActive())
    before, changes = paints.n, bar.shown_changes
    for v in range(100):
        bar.setValue(v)
        bar.setFormat(f"{v} of %m")
    assert paints.n == before                            # nothing painted on this stack
    assert (bar.value(), bar.text()) == (99, "99 of 100")   # the getters answer with the latest at once
    qtbot.waitUntil(lambda: bar.shown_value() == 99 and paints.n > before)
    assert bar.shown_changes - changes == 2              # the first value at once, then the latest: none between
    assert QProgressBar.text(bar) == "99 of 100"


def test_smooth_bar_keeps_qprogressbars_rules(qtbot):
    """The same calls on a SmoothBar and a QProgressBar leave the same values (ranges, values out of range,
    reset, busy bar), and the SmoothBar then shows them."""
    plain, smooth = QProgressBar(), SmoothBar()
    shown = _shown(qtbot, smooth)
    steps = [("setMaximum", 50), ("setValue", 30), ("setValue", 80), ("setMaximum", 20), ("setValue", 10),
             ("setRange", (5, 9)), ("setValue", 7), ("reset", None), ("setMinimum", 8), ("setRange", (0, 0)),
             ("setValue", 0), ("setRange", (0, 1000)), ("setValue", 1000)]
    for name, arg in steps:
        for b in (plain, smooth):
            f = getattr(b, name)
            f() if arg is None else f(*arg) if isinstance(arg, tuple) else f(arg)
        assert (smooth.minimum(), smooth.maximum(), smooth.value(), smooth.text()) == \
            (plain.minimum(), plain.maximum(), plain.value(), plain.text()), name
    painted = shown.n
    qtbot.waitUntil(lambda: (QProgressBar.minimum(smooth), QProgressBar.maximum(smooth), smooth.shown_value()) ==
                    (0, 1000, 1000) and shown.n > painted)


def _archives(n: int, imported: int = 0) -> tuple[ArchiveInfo, ...]:
    return tuple(ArchiveInfo(f"{i:064x}", T0 + i * WEEK, T0 + (i + 1) * WEEK, 1000 + i, 10 + i, local=i < imported,
                             imported=i < imported) for i in range(n))


def _state(archives, **kw) -> CommunityState:
    return CommunityState(CID, "Rows", Role.MEMBER, archives=archives, **kw)


def _told(view: MemberView) -> list[tuple[int, int, int, int]]:
    out: list = []
    view.model.dataChanged.connect(lambda tl, br, *_: out.append((tl.row(), br.row(), tl.column(), br.column())))
    return out


def _rows(told) -> set[int]:
    return {r for lo, hi, _c0, _c1 in told for r in range(lo, hi + 1)}


def test_member_table_tells_only_the_rows_that_changed(qtbot):
    view = MemberView(clock=lambda: T0 + 20 * WEEK)
    qtbot.addWidget(view)
    archives = _archives(12)
    view.show_state(_state(archives, policy=DownloadPolicy.LATEST))
    told = _told(view)
    view.show_state(_state(archives, policy=DownloadPolicy.LATEST))               # the same snapshot: nothing
    assert told == []
    # a download on the latest archive: its row only (its Progress cell), not the whole column
    dl = DownloadProgress(400, 1011, None, None, "downloading", ((archives[-1].archive_id, 400, 1011),))
    view.show_state(_state(archives, policy=DownloadPolicy.LATEST, download=dl))
    assert _rows(told) == {11} and view.model.index(11, PROGRESS).data() == "39%"
    told.clear()
    # the choice grows to all: the rows whose "Chosen" changed, not the one already chosen
    view.show_state(_state(archives, policy=DownloadPolicy.ALL, download=dl))
    assert _rows(told) == set(range(11))
    assert [view.model.index(i, CHOSEN).data() for i in range(12)] == ["yes"] * 12
    told.clear()
    # one archive imported (the row itself changed): that row, once
    done = archives[:3] + (replace(archives[3], local=True, imported=True),) + archives[4:]
    view.show_state(_state(done, policy=DownloadPolicy.ALL, download=dl))
    assert told == [(3, 3, 0, 7)] and view.model.index(3, STATE).data() == "imported"
    told.clear()
    # an engine event between snapshots: the rows it names, once; the same event again: nothing
    ev = Event(E.IMPORTING_HISTORY_ARCHIVE_MESSAGES, CID, {"archives": [archives[5].archive_id], "done": 1,
                                                          "total": 4}, T0)
    view.on_event(ev)
    assert _rows(told) == {5} and view.model.index(5, STATE).data() == "importing"
    told.clear()
    view.on_event(ev)
    assert told == []


def test_history_search_is_opened_on_the_views_worker_thread(qtbot, history_db, monkeypatch):  # noqa: F811
    """Opening the index creates its tables (tens of ms): HistoryView.attach_engine returns at once and a worker
    thread opens it; a search typed meanwhile filters the loaded rows, then runs over the whole history."""
    from core.status.history_search import HistorySearch
    from gui.views.history import HistoryView
    path, h = history_db
    opened_on: list = []
    real_init = HistorySearch.__init__

    def init(self, *a, **kw):
        opened_on.append(threading.get_ident())
        real_init(self, *a, **kw)
    monkeypatch.setattr(HistorySearch, "__init__", init)
    v = HistoryView()
    qtbot.addWidget(v)
    v.load_requested.connect(lambda cid, chat, limit, offset: v.show_page(
        cid, offset, h.messages(cid, chat_id=chat, limit=limit, offset=offset)))
    try:
        v.set_community(HCID, "Words")
        v.search.setText("needle")
        v.attach_engine(SimpleNamespace(paths=NodePaths(Path(path).parent)))
        v.apply_search()                       # before the index is open: a filter of the loaded rows
        qtbot.waitUntil(lambda: v.searcher is not None, timeout=10_000)
        assert opened_on and threading.get_ident() not in opened_on
        qtbot.waitUntil(lambda: v.info.text() == "2 messages in the whole history match “needle”", timeout=10_000)
    finally:
        v.shutdown()


def test_the_member_views_first_snapshot_imports_nothing_on_the_gui_thread():
    """The window's start does not import the selection rule (cold start); attach_engine imports it on a worker
    (warm_imports); then show_state imports no module. In a fresh interpreter: sys.modules is the witness."""
    code = """
import os, sys, threading
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from gui.app import make_app
import gui.main_window
from gui.views import member
assert "core.torrent.selection" not in sys.modules and "core.history_import" not in sys.modules
app = make_app()
t = threading.Thread(target=member.warm_imports)
t.start(); t.join()
from core.node.state import ArchiveInfo, CommunityState, DownloadPolicy, Role
v = member.MemberView()
a = tuple(ArchiveInfo(f"{i:064x}", 604800 * (2800 + i), 604800 * (2801 + i), 100) for i in range(3))
before = set(sys.modules)
v.show_state(CommunityState("0x02" + "ab" * 32, "c", Role.MEMBER, archives=a, policy=DownloadPolicy.LATEST))
print(sorted(set(sys.modules) - before))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(Path(__file__).resolve().parents[2]))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
