"""The Log view's cost per event on the GUI thread once it is full (5,000 / 20,000 / 50,000 rows kept), beside the
same log while it is small (1,000 rows, nothing dropped yet) and beside the way it worked before in the same run
(a KeyedTableModel: upsert, then remove the first row by key, which re-indexed every row, and scrollToBottom for
each event; 5,000 and 20,000 rows, 50,000 too with ARCHIVIST_SLOW=1; `make test`'s quick run: 2,000 and 3,000
rows kept, both ways, 500 events timed (200 the way before) instead of 2,000 (500)). Offscreen, window shown, the
event loop run (paints included) every 50 events; `LogView.add` timed alone per event: the mean and the worst."""
from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
SIZES = (5_000, 20_000, 50_000) if SLOW else (2_000, 3_000)   # quick: proves the harness, fills cost little
OLD_SIZES = SIZES if SLOW else SIZES[:2]
MEASURED, OLD_MEASURED = (2_000, 500) if SLOW else (500, 200)  # events timed once the log is full (the old way: slow)
DATA = {"archive_id": "ab" * 16, "start": 1_700_000_000, "end": 1_700_604_800}


def _old_log(rows: int):
    """The log before this change, as it was: KeyedTableModel upsert + remove(rows()[0][0]) + scrollToBottom."""
    import gui.views.log as L
    from gui.models import KeyedTableModel
    v = L.LogView(max_rows=rows)
    old = KeyedTableModel(v.model.columns, key=v.model.key, foreground=v.model.foreground)
    v.proxy.setSourceModel(old)
    v.model = old

    def add(name, community_id=None, data=None, at=None):
        v._n += 1
        sentence, level = L.describe(name, data)
        old.upsert((v._n, at or time.time(), name, community_id, L.details(data or {}, None), sentence, level))
        if old.rowCount() > rows:
            old.remove(old.rows()[0][0])
        if v._n <= 3 or v._n % 200 == 0:
            v.view.resizeColumnsToContents()
        v.view.scrollToBottom()
    v.add = add
    return v


def _per_event(app, v, fill: int, measured: int) -> tuple[float, float, int]:
    """(mean us, worst ms, rows dropped) of `measured` events into a log first filled with `fill`."""
    from core.node import events as E
    v.resize(900, 600)
    v.show()
    app.processEvents()
    for i in range(fill):
        v.add(E.HISTORY_ARCHIVE_DOWNLOADED, "0x02" + "cd" * 32, DATA, at=1_700_000_000 + i)
        if i % 500 == 0:
            app.processEvents()
    app.processEvents()
    times = []
    for i in range(measured):
        t0 = time.perf_counter()
        v.add(E.HISTORY_ARCHIVE_DOWNLOADED, "0x02" + "cd" * 32, DATA, at=1_700_000_000 + i)
        times.append(time.perf_counter() - t0)
        if i % 50 == 0:
            app.processEvents()
    app.processEvents()
    dropped = v._n - v.model.rowCount()
    v.close()
    v.deleteLater()
    app.processEvents()
    return statistics.fmean(times) * 1e6, max(times) * 1e3, dropped


def test_log_view_cost_per_event_when_full(qapp, capsys):
    from gui.views.log import LogView
    from tests.bench.table import record
    small = LogView(max_rows=max(SIZES))
    ref_mean, ref_worst, _ = _per_event(qapp, small, 1_000, MEASURED)
    rows = {n: _per_event(qapp, LogView(max_rows=n), n, MEASURED) for n in SIZES}
    old = {n: _per_event(qapp, _old_log(n), n, OLD_MEASURED) for n in OLD_SIZES}
    with capsys.disabled():
        print(f"\nLog view, GUI thread per event ({os.environ['QT_QPA_PLATFORM']}, load average "
              f"{os.getloadavg()[0]:.1f}); reference: the same log at 1,000 rows: mean {ref_mean:.0f} us, "
              f"worst {ref_worst:.1f} ms")
        for n, (mean, worst, _) in rows.items():
            line = f" {n:>6,} rows kept: mean {mean:.0f} us, worst {worst:.1f} ms"
            if n in old:
                line += f"; before (KeyedTableModel, re-indexed per event): mean {old[n][0]:.0f} us, worst " \
                        f"{old[n][1]:.1f} ms"
            print(line)
            record("gui", f"log view, one event with {n:,} rows kept", mean, "us", "same log at 1,000 rows",
                   ref_mean, "flat in the row count")
    for n, (_, _, dropped) in {**rows, **old}.items():
        assert dropped >= OLD_MEASURED - n // 50           # it was full: each run dropped its oldest rows
