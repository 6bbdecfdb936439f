"""GUI stall while the demo works: owner and member windows on the demo's real engines (two libtorrent sessions,
two Waku nodes on 127.0.0.1); the owner builds every archive through the window, the member downloads and imports
all of them. A 5 ms precise timer on the GUI thread records how late each tick fires (gui/measure.py StallMeter);
p50 / p99 / max are printed beside the same meter on the idle window in the same run, for the whole run and for
its two phases: `start` (engines start, the past chat is generated and stored) and `work` (build + download +
import, issue 15's phase). The same demo runs twice, with the engines' heavy steps in worker processes
(core/node/offload.py, what the demo and the window use; the window process's CPU seconds per phase are
printed too: unlike the stall, they hardly depend on the machine's other load) and, as the reference, in the window's own process,
after a small warm-up run that takes the first-use imports out of both.
Issue 15's target is p99 < 16 ms and max < 50 ms: printed, not asserted (a figure, QUALITY.md).

Default (`make test`'s check that the harness runs): 600 messages over 4 weeks, no warm-up run, and shorter waits:
a 0.3 s idle reference (1.5 s), the member's settle 0.1 s (1 s) and the engines' tick 0.1 s (0.3 s). ARCHIVIST_SLOW=1
(`make bench`): the warm-up, then the demo's own 3,000 over 12 weeks with the waits in brackets."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
MESSAGES, WEEKS = (3000, 12) if SLOW else (600, 4)
# the idle reference's length (ms), the member's settle and the engines' tick (s): waits, not work
WAITS = dict(idle_ms=1500, settle=1.0, tick_seconds=0.3) if SLOW else dict(idle_ms=300, settle=0.1, tick_seconds=0.1)
TARGET_P99_MS, TARGET_MAX_MS = 16.0, 50.0


def test_gui_stall_during_demo_build_download_import(tmp_path, capsys):
    from gui.measure import demo_stall
    if SLOW:
        demo_stall(tmp_path / "warm-up", messages=200, weeks=2, **WAITS)  # first-use imports out of both runs' way
    runs = {off: demo_stall(tmp_path / ("offload" if off else "in-process"), messages=MESSAGES, weeks=WEEKS,
                            offload=off, **WAITS) for off in (True, False)}
    with capsys.disabled():
        print(f"\nGUI stall ({os.environ['QT_QPA_PLATFORM']}, {os.cpu_count()} cores)")
        for off, r in runs.items():
            w = r.work
            verdict = "within" if w.p99_ms < TARGET_P99_MS and w.max_ms < TARGET_MAX_MS else "outside"
            print(f" engines' heavy steps {'in worker processes' if off else 'in the window process (reference)'}:")
            print("  " + r.idle.line("reference: idle window"))
            print("  " + r.start.line("start (engines, past chat stored)") + f"; window process CPU {r.cpu[0]:.2f} s")
            print("  " + w.line(f"build+download+import ({r.archives} archives, {r.messages} messages)")
                  + f"; window process CPU {r.cpu[1]:.2f} s")
            print("  " + r.busy.line(f"whole run ({r.seconds:.1f} s)"))
            print(f"  target for build+download+import p99 < {TARGET_P99_MS:.0f} ms, max < {TARGET_MAX_MS:.0f} ms: "
                  f"{verdict}")
    for r in runs.values():
        assert r.messages == MESSAGES and r.archives >= WEEKS        # the whole flow ran while the meter ticked
        # the GUI thread served its 5 ms timer throughout (idle: 100 of 300 ticks; quick, 10 of 60)
        assert r.busy.samples > 10 * r.seconds and r.idle.samples > (100 if SLOW else 10)
