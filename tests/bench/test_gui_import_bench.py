"""Imports after PySide6 (gui/import_hook.py): the CPU of importing what the window imports late (pyspark.sql,
pandas, pyarrow when Spark warms up; core.waku.node with libp2p when the node starts) in a fresh window process,
with the hook and with PySide6's own source scan, alternating, in the same run (4 runs each under `make bench`,
1 in `make test`). Printed, not asserted. `make test`'s quick run imports pyspark.sql, pandas and pyarrow only:
core.waku.node with libp2p was half of each child's CPU (~1 of ~2 s), and the harness is the same without it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.bench.table import record

ROOT = Path(__file__).resolve().parents[2]
SLOW = bool(os.environ.get("ARCHIVIST_SLOW"))
REPEAT = int(os.environ.get("ARCHIVIST_BENCH_REPEAT", "4" if SLOW else "1"))
LATE = ("pyspark.sql", "pandas", "pyarrow", "core.waku.node") if SLOW else ("pyspark.sql", "pandas", "pyarrow")
WHAT = "pyspark, pandas, pyarrow" + (", libp2p" if SLOW else "")
CHILD = """
import sys, time
from gui.app import make_app
app = make_app()
if sys.argv[1] == "scan":
    feature = sys.modules["shibokensupport.feature"]
    feature._mod_uses_pyside = feature._mod_uses_pyside.__closure__[0].cell_contents
c = time.process_time()
for name in sys.argv[2:]:
    __import__(name)
print(time.process_time() - c)
"""


def _cpu(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, *LATE], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def test_late_imports_in_the_window_process(capsys):
    hook, scan = [], []
    for _ in range(REPEAT):
        hook.append(_cpu("hook"))
        scan.append(_cpu("scan"))
    h, s = sorted(hook)[len(hook) // 2], sorted(scan)[len(scan) // 2]
    record("gui", f"CPU of the window's late imports ({WHAT}), median", h, "s",
           "PySide6's source scan on every import", s, "")
    with capsys.disabled():
        print(f"\nlate imports ({WHAT}) after PySide6, process CPU (median of {REPEAT}, alternating): with "
              f"gui/import_hook.py {h:.2f} s, with PySide6's source scan {s:.2f} s ({h / s:.2f}x); all runs: "
              f"{hook} / {scan}")
    assert h > 0 and s > 0
