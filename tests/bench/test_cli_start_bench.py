"""Start-up of the command line, whole process (issue 17: `archivist --help` < 0.15 s, `archivist inspect` of a small
folder < 0.3 s), each the median of several runs beside `python -c pass` measured in the same run.

The commands run as the installed `archivist` script does (`from core.cli import main`)."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from core.archive.build import build_archives
from core.synth import synthesize
from tests.bench.table import record

# runs per median and rounds: 9 and 3 for `make bench` (ARCHIVIST_SLOW=1); 1 and 1 in `make test`, enough to run the
# bench's code (its figures there are not measurements: every process of `make test` carries the coverage hook)
SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
RUNS = int(os.environ.get("ARCHIVIST_BENCH_REPEAT_CLI", "9" if SLOW else "1"))
ROUNDS = 3 if SLOW else 1
ENTRY = "import sys; from core.cli import main; sys.exit(main())"


def _median(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, timeout=120)
        times.append(time.perf_counter() - t0)
        assert p.returncode == 0, p.stderr
    return statistics.median(times)


def test_cli_start(tmp_path, capsys):
    syn = synthesize(tmp_path / "store.db", messages=200, weeks=3, seed=5)
    build_archives(syn.path, syn.community_id, [bytes.fromhex(t[2:]) for t in syn.topics], tmp_path / "d",
                   tmp_path / "t", end=syn.end + 1)
    folder = str(tmp_path / "d" / syn.community_id)
    py = sys.executable
    # interleaved: a burst of load on this shared machine hits all figures alike
    rows = {"python -c pass": [], "archivist --help": [], "archivist inspect (small folder)": [],
            "archivist verify (small folder)": []}
    argvs = {"python -c pass": [py, "-c", "pass"], "archivist --help": [py, "-c", ENTRY, "--help"],
             "archivist inspect (small folder)": [py, "-c", ENTRY, "inspect", folder],
             "archivist verify (small folder)": [py, "-c", ENTRY, "verify", folder]}
    for _ in range(ROUNDS):
        for name, argv in argvs.items():
            rows[name].append(_median(argv))
    best = {name: min(v) for name, v in rows.items()}
    ref = best["python -c pass"]
    goals = {"archivist --help": "< 0.15 s", "archivist inspect (small folder)": "< 0.3 s"}
    with capsys.disabled():
        for name in ("archivist --help", "archivist inspect (small folder)", "archivist verify (small folder)"):
            record("cli", name + ", whole process", best[name], "s", "python -c pass", ref, goals.get(name, ""))
            print(f"\n[cli bench] {name}: {best[name]:.3f} s (median of {RUNS}, best of {ROUNDS} rounds) | reference "
                  f"python -c pass {ref:.3f} s | goal {goals.get(name, '-')}", end="")
        print()
