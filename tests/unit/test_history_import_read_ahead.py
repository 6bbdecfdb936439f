"""The read ahead's worker (core.history_import.RowPool.preview, warm): the window's rows come back through a spool
file (marshal) instead of the result pipe. The rows, the pending list and every error must be exactly those of
preview_archives in process; no file may be left behind; a worker that dies loses nothing. Real signed Status
messages, real worker processes, real files."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from core.archive import codec
from core.archive.errors import ArchiveError
from core.history_import import SPOOL_PREFIX, RowPool, _remove_dead_spools, preview_archives
from tests.unit.test_history_import_preview_mutants import CID, TOPIC, T, W, _message


def _archives(n=30):
    ms = [_message(i) for i in range(n)]
    return [("0xa", codec.encode_archive(T, T + W, [TOPIC], ms[:n // 2]), T, T + W),
            ("0xb", codec.encode_archive(T, T + W, [TOPIC], ms[n // 2:]), T, T + W)]


@pytest.fixture
def pool():
    p = RowPool(workers=2)
    p.PREVIEW_MIN_BYTES = 1                   # test-sized windows go to the worker all the same
    yield p
    p.shutdown()


def test_the_worker_gives_the_in_process_rows_and_pending_and_leaves_no_file(pool):
    archives = _archives()
    want = preview_archives(CID, archives)
    assert want[1] and any(r[7] is None for r in want[0])          # some pending, some None columns
    got = pool.preview(CID, archives)
    assert got == want
    assert [list(map(type, r)) for r in got[0]] == [list(map(type, r)) for r in want[0]]     # same types too
    assert isinstance(got, tuple) and isinstance(got[0], list) and isinstance(got[1], list)
    assert pool.running and not pool.broken                           # a worker did it
    spool = pool._spool_dir
    assert os.path.basename(spool).startswith(f"{SPOOL_PREFIX}{os.getpid()}-") and os.listdir(spool) == []
    assert pool.preview(CID, archives) == want and os.listdir(spool) == []
    pool.shutdown()
    assert not os.path.exists(spool)                                   # removed with the pool


def test_every_error_of_the_worker_is_the_in_process_error_and_leaves_no_file(pool):
    good = _archives()
    cases = {
        "does not decode": [good[0], ("0xb", b"\x0a\xff\xff garbage", T, T + W)],
        "another window": [good[0], ("0xb", good[1][1], T, T + W + 1)],
        "no metadata": [("0xa", b"", T, T + W)],
        "message bomb": [("0xa", codec.encode_archive(T, T + W, [TOPIC], [])
                          + b"\x1a\x00" * (codec.MAX_ARCHIVE_MESSAGES + 1), T, T + W)],
    }
    seen = set()
    for name, archives in cases.items():
        with pytest.raises(ArchiveError) as here:
            preview_archives(CID, archives)
        with pytest.raises(ArchiveError) as there:
            pool.preview(CID, archives)
        assert (type(there.value), there.value.code, str(there.value), there.value.archive_id) == \
            (type(here.value), here.value.code, str(here.value), here.value.archive_id), name
        assert pool.running and not pool.broken and os.listdir(pool._spool_dir) == [], name
        seen.add(here.value.code)
    assert seen == {"archive-undecodable", "metadata-mismatch", "archive-too-many-messages"}


def test_a_worker_killed_as_it_is_handed_a_window_loses_nothing(pool):
    """The worker is killed as the window is handed to it: the window is decoded here instead, whole. (Killed just
    after the hand-over, the worker could answer first when this thread was descheduled: seen under load.)"""
    archives = _archives(60)
    want = preview_archives(CID, archives)
    assert pool.warm() and pool.running
    executor = pool._executor()
    submit = executor.submit

    def kill_then_submit(fn, *a, **k):
        for proc in list(executor._processes.values()):
            os.kill(proc.pid, signal.SIGKILL)
        return submit(fn, *a, **k)
    executor.submit = kill_then_submit
    assert pool.preview(CID, archives) == want
    assert pool.broken                                                 # and in process from now on
    assert pool.preview(CID, archives) == want


@pytest.mark.parametrize("damage", ["cut", "garbage", "gone", "empty"])
def test_a_spool_file_that_is_not_what_the_worker_wrote_loses_nothing(pool, damage):
    """Whatever happened to the worker's file before it is read, the window is decoded here, whole."""
    from concurrent.futures import Future
    archives = _archives()
    want = preview_archives(CID, archives)
    executor = pool._executor()
    submit = executor.submit

    def submit_then_damage(fn, *a, **k):
        path = submit(fn, *a, **k).result()
        data = open(path, "rb").read()
        if damage == "gone":
            os.unlink(path)
        else:
            with open(path, "wb") as f:
                f.write({"cut": data[:len(data) // 2], "garbage": b"\xff" * 64, "empty": b""}[damage])
        done = Future()
        done.set_result(path)
        return done
    executor.submit = submit_then_damage
    assert pool.preview(CID, archives) == want
    assert pool.broken and os.listdir(pool._spool_dir) == []


def test_warm_starts_one_worker_and_none_on_one_core():
    p = RowPool(workers=2)
    try:
        assert not p.running
        assert p.warm() is True
        assert p.running and len(p._pool._processes) >= 1
    finally:
        p.shutdown()
    one = RowPool(workers=1)
    assert one.warm() is False and not one.running


def test_spool_folders_of_dead_processes_are_removed_and_others_kept(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead = int(gone.stdout)
    names = [f"{SPOOL_PREFIX}{dead}-x1", f"{SPOOL_PREFIX}{os.getpid()}-y2", f"{SPOOL_PREFIX}abc", "other-1"]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "rows").write_bytes(b"r")
    _remove_dead_spools(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted(names[1:])
    _remove_dead_spools(str(tmp_path / "missing"))                    # no such folder: nothing to do
