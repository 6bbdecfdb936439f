"""The floor of `build`, as plain as possible: read every row of the store as the build reads them (SQLite, Python
tuples, in archive order), then SHA-1 hash and write (fsync) as many bytes as the build wrote. No build can do less.

Also the child process of the build benchmarks: `python -m tests.bench.floor_build floor DB OUT NBYTES` or
`... build DB OUT COMMUNITY_ID END TOPIC_HEX...` prints one JSON line: seconds (in process), cpu, peak RSS (KiB)."""
from __future__ import annotations

import hashlib
import json
import os
import resource
import sqlite3
import sys
import time


def floor(db: str, n_bytes: int, out: str) -> float:
    t0 = time.perf_counter()
    con = sqlite3.connect(db)
    for _ in con.execute("SELECT sig, timestamp, topic, payload, padding, hash, third_party_id FROM waku_messages "
                         "ORDER BY timestamp, hash"):
        pass
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


def _build(db: str, out: str, community_id: str, end: str, *topics: str) -> dict:
    from core.archive.build import build_archives
    res = build_archives(db, community_id, [bytes.fromhex(t) for t in topics], os.path.join(out, "d"),
                         os.path.join(out, "t"), end=int(end))
    return {"messages": res.messages, "archives": len(res.new_archive_ids), "data_bytes": res.data_bytes}


def peak_rss_kib() -> int:
    """This process's own peak RSS (VmHWM). Not getrusage's ru_maxrss: Linux carries the forking parent's peak
    across exec into it, so a child of a big test process (an xdist worker) reported the parent's ~300 MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KiB on Linux


def main(argv: list[str]) -> None:
    mode, *args = argv
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "build":
        extra = _build(*args)
    else:
        floor(args[0], int(args[2]), args[1])
        extra = {"data_bytes": int(args[2])}
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_kib = peak_rss_kib()
    print(json.dumps({"mode": mode, "seconds": seconds, "cpu": cpu, "rss_kib": rss_kib, **extra}))


if __name__ == "__main__":
    main(sys.argv[1:])
