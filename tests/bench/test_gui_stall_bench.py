"""GUI stall while the demo works: owner and member windows on the demo's real engines (two libtorrent sessions,
two Waku nodes on 127.0.0.1); the owner builds every archive through the window, the member downloads and imports
all of them. A 5 ms precise timer on the GUI thread records how late each tick fires (gui/measure.py StallMeter);
p50 / p99 / max are printed beside the same meter on the idle window in the same run. Issue 15's target is
p99 < 16 ms and max < 50 ms: printed, not asserted (a figure, QUALITY.md).

Default: 1,200 messages over 8 weeks. ARCHIVIST_SLOW=1 (`make bench`): the demo's own 3,000 over 12 weeks."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
MESSAGES, WEEKS = (3000, 12) if SLOW else (1200, 8)
TARGET_P99_MS, TARGET_MAX_MS = 16.0, 50.0


def test_gui_stall_during_demo_build_download_import(tmp_path, capsys):
    from gui.measure import demo_stall
    r = demo_stall(tmp_path, messages=MESSAGES, weeks=WEEKS)
    b = r.busy
    verdict = "within" if b.p99_ms < TARGET_P99_MS and b.max_ms < TARGET_MAX_MS else "outside"
    with capsys.disabled():
        print(f"\nGUI stall ({os.environ['QT_QPA_PLATFORM']}, {os.cpu_count()} cores)")
        print("  " + r.idle.line("reference: idle window"))
        print("  " + b.line(f"demo build+download+import ({r.archives} archives, {r.messages} messages, "
                            f"{r.seconds:.1f} s)"))
        print(f"  target p99 < {TARGET_P99_MS:.0f} ms, max < {TARGET_MAX_MS:.0f} ms: {verdict}")
    assert r.messages == MESSAGES and r.archives >= WEEKS        # the whole flow ran while the meter ticked
    assert b.samples > 10 * r.seconds and r.idle.samples > 100   # the GUI thread served its timer throughout
