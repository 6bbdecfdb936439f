"""The stage's two halves in one process, without Spark: the driver's staging of every window of a store
(stage_windows), then the executors' encoding of every staged window (StageArchivesReader.read, as a task does), on
the tree that PYTHONPATH names; prints one JSON line (seconds and CPU of each half). Compare two trees back to back
(the other one from `git archive`), on a store of tests/bench/build_bench.py `store()`:
`cd TREE && PYTHONPATH=TREE /work/main/.venv/bin/python /work/main/tests/bench/stage_bench.py STORE.sqlite TMPDIR`
(docs/BENCHMARKS.md, "the stage in bulk"). Not a pytest test: the tree before the change has no such file."""
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from core.archive.constants import MAX_ARCHIVE_PAYLOAD
from core.archive.partition import partitions
from core.pipeline.source import StageArchivesReader, WindowPartition
from core.pipeline.stage import Stage, stage_windows
from core.storage import waku_messages


def main(db: str, tmp: str) -> dict:
    con = waku_messages.connect(db, create=False)
    topics = [bytes.fromhex(r[0][2:]) for r in con.execute("SELECT DISTINCT topic FROM waku_messages")]
    lo = waku_messages.oldest_timestamp(con, topics)
    hi = con.execute("SELECT MAX(timestamp) FROM waku_messages").fetchone()[0] + 1
    windows = partitions(lo, hi)
    root = Path(tempfile.mkdtemp(dir=tmp))
    out: dict = {}
    try:
        with Stage(root, "app-bench") as stage:
            t, c = time.perf_counter(), time.process_time()
            out["rows"] = stage_windows(con, topics, windows, MAX_ARCHIVE_PAYLOAD, stage)
            out["stage_s"], out["stage_cpu"] = time.perf_counter() - t, time.process_time() - c
            reader = StageArchivesReader({"stage": str(stage.path), "windows": "[]", "cap": str(MAX_ARCHIVE_PAYLOAD),
                                          "topics": ",".join("0x" + x.hex() for x in topics)})
            t, c = time.perf_counter(), time.process_time()
            messages = size = 0
            for i, (a, b) in enumerate(windows):
                for batch in reader.read(WindowPartition(i, a, b)):
                    d = batch.to_pydict()
                    assert d["error"][0] is None, d["error"]
                    messages += d["messages"][0]
                    size += os.path.getsize(d["spool"][0])
            out["encode_s"], out["encode_cpu"] = time.perf_counter() - t, time.process_time() - c
            out["messages"], out["bytes"] = messages, size
    finally:
        con.close()
        shutil.rmtree(root, ignore_errors=True)
    return out


if __name__ == "__main__":
    print(json.dumps({**main(sys.argv[1], sys.argv[2]), "load": os.getloadavg()}))
