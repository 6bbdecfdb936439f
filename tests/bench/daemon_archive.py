"""The tests' Spark daemons with and without the run's class-data archive (tests/integration/pipeline/cli_runner.py
`daemon_env`): the CPU a master and a worker need from their start until each says it is ready, in turn, ROUNDS
rounds, each printed beside the same daemon started without the archive in the same round (the reference).

    .venv/bin/python -m tests.bench.daemon_archive [ROUNDS]

Needs a whole archive (`ARCHIVIST_SPARK_CDS`, else the checkout's `.cache/spark-cds/driver.jsa` as tests/conftest.py
sets it; `python -m core.pipeline.cds_make --wait` makes it). The CPU is the daemon's process group's (spark-class,
its launcher JVM and the daemon's JVM), read from /proc while it still runs."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("ARCHIVIST_SPARK_CDS", str(ROOT / ".cache" / "spark-cds" / "driver.jsa"))

from core.pipeline import cds  # noqa: E402
from core.pipeline.cluster import StandaloneCluster  # noqa: E402
from core.pipeline.session import SparkSettings  # noqa: E402
from tests.integration.pipeline.cli_runner import DAEMON_JVM_OPTIONS, daemon_env  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """CPU seconds of the live processes of a process group (and what they reaped)."""
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(f[2]) == pgid:
            total += sum(int(x) for x in f[11:15])
    return total / TICK


def one(env: dict[str, str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        master = StandaloneCluster(Path(tmp) / "master", worker=False, env=env)
        url = master.start()
        try:
            master_cpu = group_cpu(master.master.proc.pid)
            worker = StandaloneCluster(Path(tmp) / "worker", cores=1, memory="512m", master=False, master_url=url,
                                       env=env)
            worker.start()
            try:
                return master_cpu, group_cpu(worker.worker.proc.pid)
            finally:
                worker.stop()
        finally:
            master.stop()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    path, _, why = cds.state(SparkSettings().conf())
    if path is None or why is not None:
        sys.exit(f"no whole class-data archive ({path}: {why}); make it with python -m core.pipeline.cds_make --wait")
    with_archive = daemon_env()
    without = {"JAVA_TOOL_OPTIONS": DAEMON_JVM_OPTIONS}
    print(f"load average {os.getloadavg()[0]:.2f}; archive {path}")
    for r in range(rounds):
        ref, new = one(without), one(with_archive)
        print(f"round {r + 1}: master {new[0]:.2f} CPU-s with the archive, {ref[0]:.2f} without ({new[0] / ref[0]:.2f}x); "
              f"worker {new[1]:.2f} with, {ref[1]:.2f} without ({new[1] / ref[1]:.2f}x)", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
