"""The load benchmark's wait for "all messages stored" (tests/bench/waku_stored.py wait_until / wait_stored).

Issue 21, sixth pass: a relay phase once took 125 s ("40 msg/s"), most likely because the wait looked at the store once right
after a write of its WAL and once SETTLE_S later, then slept until the next write. A commit becomes visible to
readers only when SQLite updates its -shm index after writing the WAL (inotify does not see that); when the
writer was preempted in between and it was the flood's last commit, no write came and the wait slept out its
120 s timeout."""
import sqlite3
import threading

from tests.bench.waku_stored import WalWrites, wait_stored, wait_until


def test_a_commit_visible_only_after_the_settle_is_found_without_another_write(tmp_path):
    """Real inotify on a real file: done() writes the watched log on its first look (the commit's frames) and is
    true only from its fourth (the -shm index updated late, no write after it). The old wait slept until its
    timeout (120 s here) after the third look; the thread then outlives the 30 s join below."""
    wal = tmp_path / "x.db-wal"
    looks = []

    def done() -> bool:
        looks.append(1)
        if len(looks) == 1:
            wal.write_bytes(b"frames")
        return len(looks) >= 4

    writes = WalWrites(tmp_path / "x.db")
    stats, result = {}, []
    t = threading.Thread(target=lambda: result.append(wait_until(done, writes, 120, stats)), daemon=True)
    t.start()
    t.join(30)
    try:
        assert result, "the wait did not find the late commit without another write"
        assert stats == {"late": 1} and len(looks) == 4
    finally:
        if not t.is_alive():
            writes.close()


def test_wait_stored_follows_real_commits_and_times_out(tmp_path):
    db = tmp_path / "s.db"
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("CREATE TABLE waku_store (x)")
    c.close()
    go = threading.Event()

    def writer():
        w = sqlite3.connect(db)
        try:
            go.wait(30)
            for i in range(20):
                with w:
                    w.executemany("INSERT INTO waku_store VALUES (?)", [(i,)] * 10)
        finally:
            w.close()
    t = threading.Thread(target=writer)
    t.start()
    try:
        go.set()
        wait_stored(db, 200, 60)
    finally:
        t.join(30)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*) FROM waku_store").fetchone()[0] == 200
    c.close()
    try:
        wait_stored(db, 201, 0.2)
    except AssertionError as e:
        assert "only 200 of 201 messages stored" in str(e)
    else:
        raise AssertionError("the wait did not time out")
