"""Peak RSS of `build` (whole child process) is flat in the message count: <= 300 MiB at 100k and 1M messages, and
at 10M under ARCHIVIST_SLOW=1 (issue 17), printed beside the floor process' own (floor_build.py). `build` streams
one batch of rows and one archive at a time, so only the interpreter and its libraries should show.
ARCHIVIST_BENCH_STORE_DIR=DIR keeps the stores in DIR and reuses them (build_bench.py); `-k 10000000` runs 10M only."""
import os
import shutil

import pytest

from tests.bench.build_bench import run_build, run_floor, store
from tests.bench.table import record

LIMIT_MIB = 300
SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
# `make test` runs a small pair (it proves the harness; flat memory is still visible: 10k against 40k); `make bench`
# 100k, 1M, 10M
SIZES = [100_000, 1_000_000, 10_000_000] if SLOW else [10_000, 40_000]


@pytest.fixture(scope="module")
def peaks(tmp_path_factory):
    return {}


@pytest.mark.timeout(3600)   # 10M: making the store alone takes several minutes
@pytest.mark.parametrize("n", SIZES)
def test_build_peak_rss_is_flat(tmp_path, n, peaks):
    s = store(tmp_path / "m.sqlite", n)
    b = run_build(s, tmp_path / "b")
    f = run_floor(s, tmp_path / "f.bin", b["data_bytes"])
    shutil.rmtree(tmp_path / "b")
    rss, floor_rss = b["rss_kib"] / 1024, f["rss_kib"] / 1024
    peaks[n] = rss
    print(f"\nBUILD MEMORY {n} messages ({b['data_bytes'] / 1e6:.0f} MB of archives): peak RSS {rss:.0f} MiB "
          f"(floor process {floor_rss:.0f} MiB; limit {LIMIT_MIB} MiB)")
    record("build", f"build {n:,} messages, peak RSS (VmHWM)", rss, "MiB", "floor process", floor_rss,
           f"<= {LIMIT_MIB} MiB, flat")
    assert b["messages"] == n
    assert rss <= LIMIT_MIB
    smallest = peaks[min(peaks)]
    assert rss <= smallest + 64, f"peak RSS grows with the message count: {peaks}"
