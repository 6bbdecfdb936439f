"""The append beside a running Spark job (core/pipeline/stream.py), without a JVM: this test plays the executors
(core.pipeline.encode.encoded_rows spools each window and publishes its manifest) and the owner thread (finish /
fail). Windows are appended as they are published, in archive order (the executors' datagram wakes the feed); the
index is written only once the job has ended and agrees; a failed job, a cancel, a disk fault, a mismatch or a
kill -9 mid-append leaves the folder as it was. And the fused plan's windows per task (task_windows)."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.archive import codec, diskio
from core.archive.errors import ArchiveError
from core.archive.folder import ArchiveFolder, NewArchive
from core.pipeline.encode import NOTIFY_FILE, encoded_rows, manifest_name
from core.pipeline.session import JobCancelled
from core.pipeline.spark_encode import EncodedArchives, PipelineError, task_windows
from core.pipeline.stream import StreamingAppend, WindowFeed
from tests.integration.pipeline.helpers import T0, TOPICS, WEEK, folder_bytes, msg

ROOT = Path(__file__).resolve().parents[3]
WINDOWS = [(T0 + w * WEEK, T0 + (w + 1) * WEEK) for w in range(4)]
CHUNKS = ([40], [30, 25], [], [10])   # window 1 cut into two archives, window 2 empty


def _raw(w: int) -> list[tuple[bytes, int]]:
    lo, hi = WINDOWS[w]
    out = []
    for c, n in enumerate(CHUNKS[w]):
        ms = [msg(lo + c * 1000 + i, bytes([w, c, i % 256]) * (50 + i)) for i in range(n)]
        out.append((codec.encode_archive(lo, hi, TOPICS, ms), n))
    return out


def _reference(path: Path) -> dict[str, bytes]:
    """The folder as one append of every archive (what the reference build writes)."""
    ArchiveFolder(path, create=True).append([NewArchive(*WINDOWS[w], tuple(TOPICS), raw)
                                             for w in range(len(WINDOWS)) for raw, _ in _raw(w)])
    return folder_bytes(path)


class Executors:
    """Spools and publishes windows as a task does; `rows()` is what the job's collect() returns."""

    def __init__(self, spool: Path):
        self.spool = spool
        self.made: list[dict] = []

    def publish(self, w: int) -> None:
        names = ["window", "chunk", "start", "end", "messages", "raw", "error", "spool", "pieces"]
        self.made += [dict(zip(names, r)) for r in encoded_rows(w, *WINDOWS[w], _raw(w), None, str(self.spool))]

    def rows(self) -> EncodedArchives:
        for w in range(len(WINDOWS)):
            if not any(r["window"] == w for r in self.made):
                self.publish(w)
        return EncodedArchives(list(reversed(self.made)), TOPICS)


class Checks:
    """The feed's `check` (called before each archive and on each wake while it waits): `waiting(n)` is set once
    `n` archives have been handed over and the feed waits for the next window."""

    def __init__(self):
        self.calls = 0
        self.cond = threading.Condition()

    def __call__(self) -> None:
        with self.cond:
            self.calls += 1
            self.cond.notify_all()

    def wait_for(self, calls: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.calls >= calls, 60)


def _start(tmp_path: Path, before: list[NewArchive] = (), recheck: float = 1.0):
    folder = ArchiveFolder(tmp_path / "d", create=True)
    if before:
        folder.append(before)
    spool = tmp_path / "spool"
    spool.mkdir()
    checks = Checks()
    feed = WindowFeed(spool, WINDOWS, TOPICS, check=checks, recheck=recheck)
    return folder, feed, Executors(spool), checks


def test_the_executors_datagram_wakes_the_feed(tmp_path):
    folder, feed, executors, checks = _start(tmp_path, recheck=3600)   # no look without a datagram in this test
    appender = StreamingAppend(folder, feed)
    checks.wait_for(1)           # waiting for window 0
    executors.publish(0)         # its manifest, then the datagram
    checks.wait_for(3)           # window 0's archive handed, then the wait for window 1
    assert (tmp_path / "d" / "data").stat().st_size == codec.padded_size(len(_raw(0)[0][0]))[0]
    feed.fail()
    assert appender.result() == []
    feed.close()


def test_a_disk_fault_mid_stream_stops_the_job_and_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    lo = WINDOWS[0][0]
    old = [NewArchive(lo - WEEK, lo, tuple(TOPICS), codec.encode_archive(lo - WEEK, lo, TOPICS, [msg(lo - 5, b"x")]))]
    folder, feed, executors, _ = _start(tmp_path, old)
    before = folder_bytes(tmp_path / "d")

    class FullDisk(diskio.DiskIO):
        writes = 0

        def write(self, f, data) -> None:
            if f.name.endswith("/data"):
                FullDisk.writes += 1
                if FullDisk.writes == 3:   # window 0's archive and padding are written, then the disk is full
                    raise OSError(errno.ENOSPC, "No space left on device")
            super().write(f, data)
    monkeypatch.setattr(diskio, "disk", FullDisk())
    executors.publish(0)
    executors.publish(1)
    stopped = threading.Event()
    appender = StreamingAppend(folder, feed, on_error=stopped.set)
    assert stopped.wait(60)
    with pytest.raises(ArchiveError) as e:
        appender.result()
    feed.close()
    assert e.value.code == "disk-full"
    assert folder_bytes(tmp_path / "d") == before


def test_windows_are_appended_while_the_job_runs_and_indexed_only_at_its_end(tmp_path):
    want = _reference(tmp_path / "ref")
    folder, feed, executors, checks = _start(tmp_path)
    assert (feed.spool / NOTIFY_FILE).read_text().split()[0] == "127.0.0.1"
    executors.publish(0)
    executors.publish(1)
    appender = StreamingAppend(folder, feed)
    checks.wait_for(4)   # archives 1-3 handed (one check each), then a check while waiting for window 2
    d = tmp_path / "d"
    first_three = sum(codec.padded_size(len(raw))[0] for w in (0, 1) for raw, _ in _raw(w))
    assert (d / "data").stat().st_size == first_three      # windows 0 and 1 are in `data` ...
    assert (d / "append.pending").read_bytes() == b"0"      # ... as an append under way,
    assert not (d / "index").exists()                      # and nothing describes them yet
    executors.publish(2)   # empty: no archive
    executors.publish(3)
    feed.finish(executors.rows())
    ids = appender.result()
    feed.close()
    assert len(ids) == 4
    assert folder_bytes(d) == want


def test_a_failed_job_undoes_the_windows_already_appended(tmp_path):
    lo = WINDOWS[0][0]
    old = [NewArchive(lo - WEEK, lo, tuple(TOPICS), codec.encode_archive(lo - WEEK, lo, TOPICS, [msg(lo - 5, b"x")]))]
    folder, feed, executors, checks = _start(tmp_path, old)
    before = folder_bytes(tmp_path / "d")
    executors.publish(0)
    appender = StreamingAppend(folder, feed)
    checks.wait_for(2)   # window 0's archive handed, then the wait for window 1
    assert (tmp_path / "d" / "data").stat().st_size > len(before["data"])
    feed.fail()                  # the collect() raised (a cancel, a lost executor, an error row)
    assert appender.result() == []
    feed.close()
    assert folder_bytes(tmp_path / "d") == before


def test_a_cancel_between_archives_stops_the_job_and_undoes(tmp_path):
    folder = ArchiveFolder(tmp_path / "d", create=True)
    spool = tmp_path / "spool"
    spool.mkdir()
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:      # window 0's archive is in `data`
            raise JobCancelled("build cancelled")
    feed = WindowFeed(spool, WINDOWS, TOPICS, check=check)
    executors = Executors(spool)
    executors.publish(0)
    executors.publish(1)
    stopped = threading.Event()
    appender = StreamingAppend(folder, feed, on_error=stopped.set)
    assert stopped.wait(60)      # the append failed on its own: the job is told to stop
    with pytest.raises(JobCancelled):
        appender.result()
    feed.close()
    assert folder_bytes(tmp_path / "d") == {"data": b""}   # a first append undone: `data` cut back to nothing


def test_a_window_that_differs_from_the_collected_rows_is_refused(tmp_path):
    folder, feed, executors, checks = _start(tmp_path)
    for w in range(len(WINDOWS)):
        executors.publish(w)
    appender = StreamingAppend(folder, feed)
    produced = executors.rows()
    produced.rows[0]["pieces"] = b"\x00" * 20    # what the job returned is not what its manifest said
    feed.finish(produced)
    with pytest.raises(PipelineError) as e:
        appender.result()
    feed.close()
    assert e.value.code == "encode-mismatch"
    assert folder_bytes(tmp_path / "d") == {"data": b""}   # a first append undone: `data` cut back to nothing


@pytest.mark.parametrize("manifest", [
    '{{not json',
    '{{"window": 0, "archives": [[0, {lo}, {hi}, 40, "../x", "{h}"]]}}',                   # a path, not a name
    '{{"window": 0, "archives": [[0, {lo}, {hi}, 0, "000000-000000.archive", "{h}"]]}}'])  # no message
def test_a_manifest_that_does_not_check_waits_for_the_collected_rows(tmp_path, manifest):
    want = _reference(tmp_path / "ref")
    folder, feed, executors, checks = _start(tmp_path)
    executors.publish(0)
    (feed.spool / manifest_name(0)).write_text(manifest.format(lo=WINDOWS[0][0], hi=WINDOWS[0][1], h="00" * 20))
    appender = StreamingAppend(folder, feed)
    checks.wait_for(1)           # waiting for window 0: its manifest is not used
    assert not (tmp_path / "d" / "data").exists()
    feed.finish(executors.rows())
    assert len(appender.result()) == 4
    feed.close()
    assert folder_bytes(tmp_path / "d") == want


CHILD = """
import sys
from pathlib import Path
from core.archive.folder import ArchiveFolder
from core.pipeline.stream import StreamingAppend, WindowFeed
from tests.unit.pipeline.test_stream import TOPICS, WINDOWS
d, spool = Path(sys.argv[1]), Path(sys.argv[2])
def check():
    print("check", flush=True)
feed = WindowFeed(spool, WINDOWS, TOPICS, check=check)
print("ready", flush=True)
sys.stdin.readline()
StreamingAppend(ArchiveFolder(d), feed).join()   # never ends: the job does not finish
"""


def test_kill_9_mid_append_loses_nothing_and_the_next_build_gives_the_same_bytes(tmp_path):
    lo = WINDOWS[0][0]
    old = [NewArchive(lo - WEEK, lo, tuple(TOPICS), codec.encode_archive(lo - WEEK, lo, TOPICS, [msg(lo - 5, b"x")]))]
    ArchiveFolder(tmp_path / "d", create=True).append(old)
    before = folder_bytes(tmp_path / "d")
    spool = tmp_path / "spool"
    spool.mkdir()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "d"), str(spool)], cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline() == "ready\n"
        executors = Executors(spool)
        executors.publish(0)
        executors.publish(1)
        child.stdin.write("go\n")
        child.stdin.flush()
        for _ in range(4):       # three archives handed, then the wait for window 2
            assert child.stdout.readline() == "check\n"
        assert (tmp_path / "d" / "append.pending").exists()
    finally:
        child.kill()
        child.wait()
    assert (tmp_path / "d" / "data").stat().st_size > len(before["data"])
    folder = ArchiveFolder(tmp_path / "d")   # the open cuts the interrupted append
    assert folder.recovered_bytes > 0
    assert folder_bytes(tmp_path / "d") == before
    # the next build appends the same windows again, after the archive that was there
    rebuilt = ArchiveFolder(tmp_path / "again", create=True)
    rebuilt.append(old)
    spool2 = tmp_path / "spool2"
    spool2.mkdir()
    feed = WindowFeed(spool2, WINDOWS, TOPICS)
    appender = StreamingAppend(rebuilt, feed)
    feed.finish(Executors(spool2).rows())
    assert len(appender.result()) == 4
    feed.close()
    ref = ArchiveFolder(tmp_path / "ref2", create=True)
    ref.append(old)
    ref.append([NewArchive(*WINDOWS[w], tuple(TOPICS), raw) for w in range(4) for raw, _ in _raw(w)])
    assert folder_bytes(tmp_path / "again") == folder_bytes(tmp_path / "ref2")


@pytest.mark.parametrize("windows, tasks, cores", [(40, 4, 2), (3, 3, 2), (5, 4, 2), (7, 4, 4), (1, 1, 2), (9, 2, 1)])
def test_tasks_that_start_together_share_the_next_run_of_windows(windows, tasks, cores):
    plan = task_windows(windows, tasks, cores)
    assert sorted(w for ws in plan for w in ws) == list(range(windows))   # every window once
    assert all(ws and ws == sorted(ws) for ws in plan)                     # each task in archive order
    for first in range(0, tasks, cores):                                  # a group: one contiguous run, dealt out
        group = plan[first:first + cores]
        run = sorted(w for ws in group for w in ws)
        assert run == list(range(run[0], run[-1] + 1))
        assert [ws[0] for ws in group] == run[:len(group)]
    if (windows, tasks, cores) == (40, 4, 2):
        assert plan[0][:3] == [0, 2, 4] and plan[1][:3] == [1, 3, 5] and plan[2][0] == 20
