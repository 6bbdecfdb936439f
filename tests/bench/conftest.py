"""Prints the benchmarks' one table at the end of a run that recorded figures (tests/bench/table.py) and writes
it to bench-results.md at the repository's root (not committed: docs/BENCHMARKS.md quotes a run by its date)."""
from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

from tests.bench import table as T

ROOT = Path(__file__).resolve().parents[2]


def pytest_sessionfinish(session, exitstatus):
    if not T.FIGURES:
        return
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    size = "full size (ARCHIVIST_SLOW=1)" if os.environ.get("ARCHIVIST_SLOW") == "1" else "small (default)"
    head = (f"# Benchmark run {when}\n\n{platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.python_implementation()} {platform.python_version()}, load average at the end "
            f"{os.getloadavg()[0]:.1f}; sizes: {size}.\n")
    text = head + "\n" + T.table(T.FIGURES) + "\n"
    if session.config.getoption("capture") != "no":
        return                              # only runs that show their output (make bench: -s) print the table
    print("\n\n" + text)
    (ROOT / "bench-results.md").write_text(text)
