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
    # the waits short (a 0.3 s idle reference, 0.1 s settle and tick; tests/bench/test_gui_stall_bench.py's quick run)
    r = demo_stall(tmp_path, messages=1200, weeks=8, idle_ms=300, settle=0.1, tick_seconds=0.1)
    with capsys.disabled():
        print("\n" + r.idle.line("reference (idle window)"))
        print(r.busy.line(f"build+download+import ({r.archives} archives, {r.messages} messages, {r.seconds:.1f} s)"))
    assert r.archives >= 8 and r.messages == 1200          # the whole flow ran while the meter ticked
    assert r.busy.samples > 10 * r.seconds                  # the GUI thread kept serving its timer throughout


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.skipif(__import__("os").environ.get("ARCHIVIST_SLOW") != "1", reason="starts a JVM: ARCHIVIST_SLOW=1")
def test_gui_stall_while_spark_warms_up(qtbot, tmp_path, capsys):
    from gui.measure import spark_warm_stall
    visible, warm, fig = spark_warm_stall(tmp_path)
    with capsys.disabled():
        print(f"\nwindow visible after {visible:.2f} s; Spark warm-up {warm:.1f} s in the background")
        print(fig.line("GUI stall during the Spark warm-up"))
    assert fig.samples > 10 * warm          # the GUI thread kept ticking during the whole warm-up
