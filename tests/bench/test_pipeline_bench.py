"""Spark pipeline benchmarks, each figure next to a reference measured in the same run.

Default (`make test`): a small store (5k messages), enough to run every step and print every figure.
ARCHIVIST_SLOW=1 (`make bench`): 1M messages (ARCHIVIST_BENCH_MESSAGES overrides).
Figures: build with a warm session vs the single-process reference path vs the I/O+hash floor; hydrate vs a plain
SQLite bulk insert of the same rows; cold start (new process: JVM + session + first job) separately.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from core.archive.build import build_archives
from core.archive.folder import ArchiveFolder
from core.pipeline.build import submit_build
from core.pipeline.hydrate import decode_entries, submit_hydrate
from core.pipeline.session import default_owner
from core.status.unwrap import default_unwrap
from core.storage import history
from core.synth import synthesize
from tests.bench.table import record

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
MESSAGES = int(os.environ.get("ARCHIVIST_BENCH_MESSAGES", 1_000_000 if SLOW else 5_000))
pytestmark = [pytest.mark.spark] + ([pytest.mark.slow, pytest.mark.timeout(4 * 3600)] if SLOW else [])

COLD_START = """
import time; t0 = time.perf_counter()
from core.pipeline.session import SparkOwner
o = SparkOwner(); o.submit(lambda s, j: None, "session").result(600); t1 = time.perf_counter()
o.warm().result(600); t2 = time.perf_counter(); o.close()
print(f"{t1 - t0:.2f} {t2 - t1:.2f}")
"""


@pytest.fixture(scope="session")
def bench_owner():
    owner = default_owner()
    owner.warm().result(timeout=600)
    yield owner
    owner.close()


def report(name: str, seconds: float, n: int, ref_name: str | None = None, ref_seconds: float | None = None):
    line = f"BENCH pipeline {name}: {seconds:.2f} s, {n / seconds:,.0f} msg/s"
    if ref_name:
        line += f"  | {ref_name}: {ref_seconds:.2f} s, {n / ref_seconds:,.0f} msg/s  (x{seconds / ref_seconds:.2f})"
    print(line)
    record("spark", f"{name}, {n:,} messages", seconds, "s", ref_name or "", ref_seconds)


def io_hash_floor(db, topics, start, end, out_path, nbytes) -> float:
    """Read the same rows from SQLite, SHA-1 every byte written, write `nbytes` and fsync."""
    t = time.perf_counter()
    con = sqlite3.connect(str(db))
    marks = ",".join("?" * len(topics))
    h = hashlib.sha1()
    with open(out_path, "wb") as f:
        for row in con.execute(f"SELECT sig, timestamp, topic, payload, padding, hash, third_party_id FROM waku_messages"
                               f" WHERE timestamp >= ? AND timestamp < ? AND topic IN ({marks})",
                               (start, end, *topics)):
            h.update(row[3])
            f.write(row[3])
            f.write(row[0])
        f.write(bytes(max(0, nbytes - f.tell())))
        f.flush()
        os.fsync(f.fileno())
    con.close()
    return time.perf_counter() - t


def test_pipeline_benchmarks(bench_owner, tmp_path):
    t = time.perf_counter()
    r = synthesize(tmp_path / "db.sqlite", messages=MESSAGES, weeks=max(4, MESSAGES // 50_000), seed=42)
    print(f"\nBENCH pipeline store: {MESSAGES:,} messages generated in {time.perf_counter() - t:.1f} s")
    topics = [bytes.fromhex(x[2:]) for x in r.topics]
    db = tmp_path / "db.sqlite"

    t = time.perf_counter()
    ref = build_archives(db, r.community_id, topics, tmp_path / "ref", tmp_path / "ref-t", end=r.end)
    t_ref = time.perf_counter() - t
    t = time.perf_counter()
    job = submit_build(bench_owner, db, r.community_id, topics, tmp_path / "spark", tmp_path / "spark-t", end=r.end)
    sp = job.result(3600)
    t_spark = time.perf_counter() - t
    assert sp.infohash == ref.infohash and sp.messages == ref.messages == MESSAGES
    t_spark_df = None
    if MESSAGES <= 2_000_000:  # the slower plan is skipped on the 10M run
        t = time.perf_counter()
        spd = submit_build(bench_owner, db, r.community_id, topics, tmp_path / "spark-df", tmp_path / "spark-df-t",
                           end=r.end, plan="dataframe").result(3600)
        t_spark_df = time.perf_counter() - t
        assert spd.infohash == ref.infohash
        shutil.rmtree(tmp_path / "spark-df")
    shutil.rmtree(tmp_path / "ref")
    t_floor = io_hash_floor(db, r.topics, r.start, r.end, tmp_path / "floor.bin", ref.data_bytes)
    report("build (Spark, fused plan)", t_spark, MESSAGES, "reference build_archives", t_ref)
    report("build (Spark, fused plan)", t_spark, MESSAGES, "I/O+hash floor", t_floor)
    (tmp_path / "floor.bin").unlink()
    if t_spark_df is not None:
        report("build (Spark, dataframe plan)", t_spark_df, MESSAGES, "reference build_archives", t_ref)
    print(f"BENCH pipeline data: {ref.data_bytes / 1e6:.1f} MB in {len(ref.new_archive_ids)} archives")

    folder = ArchiveFolder(tmp_path / "spark" / r.community_id)
    t = time.perf_counter()
    hy = submit_hydrate(bench_owner, folder.path, r.community_id, tmp_path / "member.sqlite").result(3600)
    t_hydrate = time.perf_counter() - t
    assert hy.messages == MESSAGES
    # Reference: the same rows, decoded beforehand (not timed), inserted in one transaction; archive by archive so
    # that 10M rows need not sit in memory at once.
    con = history.connect(tmp_path / "plain.sqlite")
    t_bulk = 0.0
    con.execute("BEGIN")
    for a, e in folder.ordered():
        [(_, err, rows)] = decode_entries([(a, e.offset, e.size, e.padding, e.start, e.end)], str(folder.data_path),
                                          r.community_id, default_unwrap)
        t = time.perf_counter()
        con.executemany(history._INSERT, rows)
        t_bulk += time.perf_counter() - t
    t = time.perf_counter()
    con.execute("COMMIT")
    t_bulk += time.perf_counter() - t
    assert con.execute("SELECT COUNT(*) FROM history_messages").fetchone()[0] == MESSAGES
    con.close()
    report("hydrate (Spark, warm session)", t_hydrate, MESSAGES, "plain SQLite bulk insert", t_bulk)

    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", COLD_START], capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    t_session, t_first = map(float, out.stdout.split()[-2:])
    record("spark", "cold start: JVM + session, then the warm-up job", t_session + t_first, "s", "session alone",
           t_session)
    print(f"BENCH pipeline cold start: session {t_session:.1f} s + first (warm-up) job {t_first:.1f} s "
          f"= {t_session + t_first:.1f} s (new process, while this process's JVM is idle)")
