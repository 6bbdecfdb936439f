"""Owner thread, progress and cancel of Spark jobs."""
from __future__ import annotations

import socket
import threading

import pytest
from pyspark.errors import PythonException

from core.archive import diskio
from core.archive.build import build_archives
from core.archive.folder import ArchiveFolder
from core.pipeline.build import submit_build
from core.pipeline.session import JobCancelled

from .helpers import COMMUNITY, T0, TOPICS, WEEK, folder_bytes, msg, write_store

pytestmark = pytest.mark.spark


@pytest.fixture
def hold_server():
    """A loopback socket the build's encode tasks connect to and wait on: proves a job is mid-flight."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(120)
    conns: list[socket.socket] = []
    yield srv, conns
    for c in conns:
        c.close()
    srv.close()


def store(tmp_path, weeks=3):
    ms = [msg(T0 + w * WEEK + i * 61, bytes([i % 256]) * 200, TOPICS[i % 2]) for w in range(weeks) for i in range(300)]
    return write_store(tmp_path / "db.sqlite", ms)


def test_job_runs_on_owner_thread_without_blocking_caller(spark_owner, tmp_path):
    db = store(tmp_path)
    gate = threading.Event()
    seen = {}

    def job(spark, j):
        seen["thread"] = threading.current_thread()
        assert gate.wait(60), "caller never released the gate: submit() blocked"
        from core.pipeline.build import build_job
        return build_job(spark, j, db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t", end=T0 + 3 * WEEK)

    j = spark_owner.submit(job, "gated build")
    assert not j.done()          # submit() returned while the job waits for us
    gate.set()                   # if submit() had run the job on this thread, we would never get here
    res = j.result(300)
    assert seen["thread"] is spark_owner.thread and seen["thread"] is not threading.current_thread()
    assert len(res.new_archive_ids) == 3
    assert j.progress() == 1.0


@pytest.mark.parametrize("plan", ["fused", "dataframe"])
def test_cancel_mid_job_leaves_folder_exactly_as_before(spark_owner, tmp_path, hold_server, plan):
    db = store(tmp_path, weeks=4)
    # An existing folder with archives and a torrent, built by the reference path.
    build_archives(db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t", end=T0 + 2 * WEEK)
    before = (folder_bytes(tmp_path / "d"), folder_bytes(tmp_path / "t"))
    assert before[0] and before[1]
    srv, conns = hold_server
    j = submit_build(spark_owner, db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t", end=T0 + 4 * WEEK,
                     hold=srv.getsockname(), plan=plan)
    conns.append(srv.accept()[0])  # an encode task is now running inside Spark
    p = j.progress()
    assert 0.0 <= p < 1.0
    j.cancel()                     # from this (non-owner) thread
    with pytest.raises(JobCancelled):
        j.result(300)
    assert (folder_bytes(tmp_path / "d"), folder_bytes(tmp_path / "t")) == before
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [COMMUNITY]   # no spool folder left behind
    # The owner is still usable after a cancel, and the same build then succeeds.
    res = submit_build(spark_owner, db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t",
                       end=T0 + 4 * WEEK).result(300)
    assert len(res.new_archive_ids) == 2


def test_cancel_before_start_never_runs(spark_owner, tmp_path):
    gate = threading.Event()
    first = spark_owner.submit(lambda s, j: gate.wait(60), "blocker")
    ran = []
    second = spark_owner.submit(lambda s, j: ran.append(1), "never")
    second.cancel()
    gate.set()
    assert first.result(60) is True
    with pytest.raises(JobCancelled):
        second.result(60)
    assert ran == []


def test_progress_reaches_one_and_errors_propagate(spark_owner, tmp_path):
    j = spark_owner.submit(lambda s, job: s.sparkContext.parallelize(range(100), 4).map(lambda x: 1 // (x - 42))
                           .count(), "failing")
    with pytest.raises(PythonException) as ei:     # the executor's error, carried to the driver
        j.result(120)
    assert "ZeroDivisionError" in str(ei.value)
    ok = spark_owner.submit(lambda s, job: s.sparkContext.parallelize(range(100), 4).sum(), "sum")
    assert ok.result(120) == 4950 and ok.progress() == 1.0


class DataWrites(diskio.DiskIO):
    """The real disk, noting the bytes written to `data` files: `reached(n)` waits until n have been."""

    def __init__(self):
        self.written = 0
        self.cond = threading.Condition()

    def write(self, f, data) -> None:
        super().write(f, data)
        if getattr(f, "name", "").endswith("/data"):
            with self.cond:
                self.written += len(data)
                self.cond.notify_all()

    def reached(self, n: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.written >= n, 120)


@pytest.mark.parametrize("then", ["finish", "cancel"])
def test_windows_are_appended_while_later_ones_still_encode(spark_owner, tmp_path, hold_server, monkeypatch, then):
    """Windows 0-1 are released, 2-3 held in their tasks: the driver appends 0-1 meanwhile (core/pipeline/stream.py),
    as an append under way that no index names yet; then the job finishes (the reference's bytes) or is cancelled
    (the folder exactly as before)."""
    db = store(tmp_path, weeks=4)
    for out in ("ref", "d"):      # window 0 exists; the reference then builds windows 1-3 as the Spark build will
        build_archives(db, COMMUNITY, TOPICS, tmp_path / out, tmp_path / f"{out}-t", end=T0 + WEEK)
    ref = build_archives(db, COMMUNITY, TOPICS, tmp_path / "ref", tmp_path / "ref-t", end=T0 + 4 * WEEK)
    before = (folder_bytes(tmp_path / "d"), folder_bytes(tmp_path / "d-t"))
    entries = sorted(ArchiveFolder(tmp_path / "ref" / COMMUNITY).entries.values(), key=lambda e: e.offset)
    assert len(entries) == 4
    writes = DataWrites()
    monkeypatch.setattr(diskio, "disk", writes)
    srv, conns = hold_server
    j = submit_build(spark_owner, db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "d-t", end=T0 + 4 * WEEK,
                     hold=srv.getsockname())
    held = []
    while len(held) < 2:          # one task per new window (1-3 of the store, 0-2 of the job) on two cores:
        c = srv.accept()[0]       # release the first new window's task, hold the others
        conns.append(c)
        if c.makefile("rb").readline() == b"0\n":
            c.sendall(b"go")
        else:
            held.append(c)
    assert writes.reached(entries[1].size)            # window 1 is in `data` while windows 2-3 wait
    d = tmp_path / "d" / COMMUNITY
    assert (d / "append.pending").read_bytes() == str(entries[1].offset).encode()
    assert folder_bytes(tmp_path / "d")[f"{COMMUNITY}/index"] == before[0][f"{COMMUNITY}/index"]
    if then == "finish":
        for c in held:
            c.sendall(b"go")
        res = j.result(300)
        assert res.new_archive_ids == ref.new_archive_ids
        assert folder_bytes(tmp_path / "d") == folder_bytes(tmp_path / "ref")
        assert folder_bytes(tmp_path / "d-t") == folder_bytes(tmp_path / "ref-t")
    else:
        j.cancel()
        with pytest.raises(JobCancelled):
            j.result(300)
        assert (folder_bytes(tmp_path / "d"), folder_bytes(tmp_path / "d-t")) == before
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [COMMUNITY]   # no spool folder left behind
