"""When the Waku load benchmark's messages are in the node's SQLite file (tests/bench/waku_load.py,
test_waku_bench.py): the count, the wait on the write-ahead log's writes (inotify), and `python -m
tests.bench.waku_stored commit-lag N` (how late a store commit becomes visible after its WAL write: commit_lag)."""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.bench.table import pct

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stored(db) -> int:
    """How many messages the node's store holds (a read-only connection)."""
    import sqlite3
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
        return c.execute("SELECT count(*) FROM waku_store").fetchone()[0]


SETTLE_S = 0.005        # a commit is usually visible this long after its last log write
SETTLE_MAX_S = 0.1      # ... and is looked for again at doubling intervals up to this, with no write needed


class WalWrites:
    """inotify (libc through ctypes) on the folder of a SQLite file: wait() returns once its write-ahead log was
    written or created (each commit of the node's store), or at the timeout. Our own read-only queries write only
    the -shm index, which is not waited on."""

    IN_MODIFY, IN_CREATE = 0x2, 0x100

    def __init__(self, db: Path, name: str | None = None):
        import ctypes
        self.name = (name or db.name + "-wal").encode()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0 and self.libc.inotify_add_watch(self.fd, str(db.parent).encode(),
                                                            self.IN_MODIFY | self.IN_CREATE) >= 0

    def wait(self, timeout: float) -> bool:
        import select
        import struct
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0 and select.select([self.fd], [], [], left)[0]:
            data = os.read(self.fd, 65536)
            while data:                         # struct inotify_event: wd, mask, cookie, len, then the name
                _, _, _, size = struct.unpack_from("iIII", data)
                if data[16:16 + size].rstrip(b"\0") == self.name:
                    return True
                data = data[16 + size:]
        return False

    def close(self) -> None:
        os.close(self.fd)


def wait_until(done, writes: WalWrites, timeout: float, stats: dict | None = None) -> float:
    """The moment done() is true, looked at again after each write of the log. A write is seen as its frames land,
    before the commit is visible to readers (SQLite updates the -shm index after the write, which inotify does
    not see; the writer can be preempted in between for longer than SETTLE_S on a loaded machine). So after a
    write done() is looked at at once, after SETTLE_S, then at doubling intervals up to SETTLE_MAX_S until the
    next write: a commit that became visible late is found without waiting for a write that may never come.
    Until issue 21's sixth pass it waited for the next write after the SETTLE_S look: when the last commit of a
    flood was a late one, it waited out the whole timeout (most likely the relay phase of 125 s, "40 msg/s",
    seen once in 17 runs). `stats["late"]` counts done() found true only by a later look, with no write since (late commits)."""
    deadline = time.monotonic() + timeout
    looks = None         # looks since the last write (None: no write seen yet, wait for one)
    while True:
        if done():
            if looks is not None and looks >= 2 and stats is not None:
                stats["late"] = stats.get("late", 0) + 1   # the old wait would have slept until the timeout here
            return time.monotonic()
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"not done within {timeout} s")
        if looks is None:
            wrote = writes.wait(left)
        else:
            wrote = writes.wait(min(left, SETTLE_S * 2 ** looks, SETTLE_MAX_S))
        looks = 0 if wrote else None if looks is None else looks + 1


def wait_stored(db, n: int, timeout: float, stats: dict | None = None) -> float:
    """The moment `n` messages are in the node's SQLite file (wait_until, on its write-ahead log)."""
    writes = WalWrites(Path(db))             # watching before the first count: no commit goes unseen
    try:
        try:
            return wait_until(lambda: stored(db) >= n, writes, timeout, stats)
        except TimeoutError:
            raise AssertionError(f"only {stored(db)} of {n} messages stored within {timeout} s") from None
    finally:
        writes.close()


def commit_writer(db: str, n: int) -> None:
    """Child of commit_lag: one commit of 128 rows of 1 KiB (the node's store writer's batch, MessageStore.
    insert_rows) per line read from stdin, in a worker thread (as the node did until issue 21's eighth pass; the visibility lag is SQLite's either way); prints "done" after each."""
    from core.waku.store_db import MessageStore
    from core.waku.message import WakuMessage
    from tests.bench.waku_load import CT_LOAD, PS
    store = MessageStore(db)
    store.defer_checkpoints()
    for _ in range(n):
        sys.stdin.readline()
        rows = store.rows((PS, WakuMessage(os.urandom(1024), CT_LOAD, timestamp=time.time_ns())) for _ in range(128))
        t = threading.Thread(target=store.insert_rows, args=(rows,))
        t.start()
        t.join()
        print("done", flush=True)
    store.close()


def commit_lag(n: int) -> None:
    """How long after its last WAL write a commit of the node's store becomes visible to a reader (what
    wait_until looks for): n commits by a child process, one at a time, each watched with inotify while the count
    is polled every 0.2 ms. Prints the lags' percentiles and how many commits a look begun more than SETTLE_S after
    the last write still missed (each of them, had it been a flood's last commit, made the wait before issue 21's
    sixth pass sleep out its whole timeout; a reader preempted after seeing the write is not counted)."""
    import tempfile
    db = Path(tempfile.mkdtemp()) / "lag.db"
    from core.waku.store_db import MessageStore
    MessageStore(db).close()
    writer = subprocess.Popen([sys.executable, "-m", "tests.bench.waku_stored", "commit-writer", str(db), str(n)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=_REPO)
    writes = WalWrites(db)
    lags, misses = [], 0
    try:
        for i in range(n):
            writer.stdin.write("go\n")
            writer.stdin.flush()
            assert writes.wait(30), "no write of the log"
            last, missed = time.monotonic(), False
            while True:
                look = time.monotonic()
                if stored(db) >= 128 * (i + 1):
                    break
                missed = missed or look - last > SETTLE_S   # not visible at a look begun SETTLE_S after the write
                if writes.wait(0.0002):
                    last, missed = time.monotonic(), False
            lags.append(time.monotonic() - last)
            misses += missed
            assert writer.stdout.readline().strip() == "done"
    finally:
        writes.close()
        writer.kill()
        writer.wait(10)
    print(f"{n} commits of 128 x 1 KiB: visible after the last log write p50 {pct(lags, 0.5) * 1e3:.2f} ms, p99 "
          f"{pct(lags, 0.99) * 1e3:.2f} ms, max {max(lags) * 1e3:.2f} ms; {misses} still invisible at a look "
          f"begun over the {SETTLE_S * 1e3:.0f} ms settle after it (reference: the settle itself); load average "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":  # from the repository root: python -m tests.bench.waku_stored commit-lag N
    if sys.argv[1] == "commit-lag":
        commit_lag(int(sys.argv[2]))
    elif sys.argv[1] == "commit-writer":
        commit_writer(sys.argv[2], int(sys.argv[3]))
