"""Build throughput (reference path) against the floor measured in the same run:
reading the same rows from SQLite, then SHA-1 hashing and writing the same number of bytes.

Default: 50k messages. ARCHIVIST_SLOW=1: 1M messages (ARCHIVIST_BENCH_MESSAGES overrides)."""
import hashlib
import os
import sqlite3
import time

from core.archive.build import build_archives
from core.synth import synthesize

N = int(os.environ.get("ARCHIVIST_BENCH_MESSAGES", 1_000_000 if os.environ.get("ARCHIVIST_SLOW") == "1" else 50_000))


def floor(db: str, n_bytes: int, out) -> float:
    t0 = time.perf_counter()
    con = sqlite3.connect(db)
    rows = 0
    for _ in con.execute("SELECT sig, timestamp, topic, payload, padding, hash, third_party_id FROM waku_messages "
                         "ORDER BY timestamp, hash"):
        rows += 1
    con.close()
    block = os.urandom(1 << 20)
    h = hashlib.sha1()
    with open(out, "wb") as f:
        left = n_bytes
        while left > 0:
            b = block[:min(left, len(block))]
            h.update(b)
            f.write(b)
            left -= len(b)
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - t0


def test_build_throughput(tmp_path):
    s = synthesize(tmp_path / "m.sqlite", messages=N, weeks=max(4, N // 25_000), channels=5, seed=1)
    topics = [bytes.fromhex(t[2:]) for t in s.topics]
    t0 = time.perf_counter()
    res = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end)
    t_build = time.perf_counter() - t0
    t_floor = floor(s.path, res.data_bytes, tmp_path / "floor.bin")
    mb = res.data_bytes / 1e6
    print(f"\nBUILD {N} messages, {len(res.new_archive_ids)} archives, {mb:.1f} MB data")
    print(f"  reference build : {t_build:7.2f} s  {N / t_build:10.0f} msg/s  {mb / t_build:7.1f} MB/s")
    print(f"  floor (read+sha1+write): {t_floor:7.2f} s  {N / t_floor:10.0f} msg/s  {mb / t_floor:7.1f} MB/s")
    print(f"  build / floor = {t_build / t_floor:.2f}x")
    assert res.messages == N
