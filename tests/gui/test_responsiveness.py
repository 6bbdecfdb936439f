"""Figures, not timed assertions (QUALITY.md): cold start to a painted window, and the GUI thread's stall while
the demo builds, downloads and imports. Each figure is printed next to a reference measured in the same run."""
from __future__ import annotations

import pytest


def test_cold_start_figure(capsys):
    from gui.measure import cold_start, python_baseline
    base = python_baseline(1)
    cold = cold_start(1)
    with capsys.disabled():
        print(f"\ncold start: window painted after {cold[0]:.2f} s; reference: bare python start {base[0]:.2f} s")
    assert len(cold) == 1, "the window never reported itself visible"


def test_gui_stall_during_build_download_import(qtbot, tmp_path, capsys):
    pytest.importorskip("core.node.engine")
    from gui.measure import demo_stall
    r = demo_stall(tmp_path, messages=1200, weeks=8)
    with capsys.disabled():
        print("\n" + r.idle.line("reference (idle window)"))
        print(r.busy.line(f"build+download+import ({r.archives} archives, {r.messages} messages, {r.seconds:.1f} s)"))
    assert r.archives >= 8 and r.messages == 1200          # the whole flow ran while the meter ticked
    assert r.busy.samples > 10 * r.seconds                  # the GUI thread kept serving its timer throughout
