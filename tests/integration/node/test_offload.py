"""The engine's heavy steps in a worker process (core/node/offload.py): the same bytes and rows as in process, and a
worker killed at any point is a crash of the node at that point (no message lost or duplicated, the next run
finishes with the same bytes as an uninterrupted one). Real worker processes, real SQLite and archive folders."""
from __future__ import annotations

import functools
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from core.archive.errors import ArchiveError
from core.node.offload import JobCancelled, Offloader, WorkerDied

ROOT = Path(__file__).resolve().parents[3]
WEEK = 7 * 24 * 3600


# ---- jobs the worker runs (module level: the worker imports this module by name) ---------------------------------

def count_job(n: int, report) -> int:
    for i in range(n):
        report(i + 1, n)
    return os.getpid()


def pid_then_block(report) -> None:
    report(os.getpid())
    threading.Event().wait()              # until it is killed


def failing_job() -> None:
    from core.archive.errors import ArchiveError
    raise ArchiveError("bad archive", code="some-code", archive_id="abc")


def build_then_die(*args, kill_after: int = 1):
    """core.node.jobs.build_job, whose worker SIGKILLs itself after `kill_after` archives were made: mid-append."""
    from core.archive import build
    from core.node import jobs
    real = build.encode_store_windows

    def dying(*a, **kw):
        for i, item in enumerate(real(*a, **kw)):
            if i == kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            yield item
    build.encode_store_windows = dying
    return jobs.build_job(*args)


def hydrate_then_die(history_path, keys_path, cid, folder, chosen):
    """core.node.hydrate.hydrate_job whose worker SIGKILLs itself inside the window's transaction."""
    from core.node import hydrate
    from core.storage import history
    real = history.import_window

    def dying(con, community_id, start, end, rows, archive_ids=(), pending=()):
        con.execute("BEGIN IMMEDIATE")
        con.executemany(history._INSERT, list(rows))          # the window's rows, never committed: killed first
        os.kill(os.getpid(), signal.SIGKILL)
    history.import_window = dying
    try:
        return hydrate.hydrate_job(history_path, keys_path, cid, folder, chosen)
    finally:
        history.import_window = real


# ---- helpers ----------------------------------------------------------------------------------------------------

@pytest.fixture
def offloader():
    off = Offloader()
    yield off
    off.close()


def _source(tmp_path):
    from core.synth import synthesize
    syn = synthesize(tmp_path / "src.sqlite", messages=1500, weeks=5, channels=3, seed=3, min_payload=40,
                     max_payload=600)
    return syn, {m for (m,) in sqlite3.connect(syn.path).execute("SELECT hash FROM waku_messages")}


def _control(root: Path, syn, now: float, offload=None):
    from core.node import events as E
    from core.node.clock import FakeClock
    from core.node.community import CommunityConfig, NodePaths
    from core.node.control import ControlNode
    from core.storage.archive_state import ArchiveStateDB
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "messages.sqlite").exists():
        shutil.copy(syn.path, root / "messages.sqlite")
    paths = NodePaths(root).ensure()
    state = ArchiveStateDB(paths.state_db)
    cfg = CommunityConfig(syn.community_id, "", "control", syn.chat_ids)
    return ControlNode(cfg, paths, state, E.EventBus(), FakeClock(now), offload=offload), state


def _files(root: Path, cid: str) -> tuple[bytes, bytes, set[bytes]]:
    f = root / "archivedata" / cid
    hashes = {h for (h,) in sqlite3.connect(root / "messages.sqlite").execute("SELECT hash FROM waku_messages")}
    return (f / "data").read_bytes(), (f / "index").read_bytes(), hashes


def _archived(root: Path, cid: str) -> Counter:
    from core.archive.folder import ArchiveFolder
    folder = root / "archivedata" / cid
    if not (folder / "index").exists():
        return Counter()
    f = ArchiveFolder(folder, recover=False)     # read only: what the kill left, before any repair
    return Counter(m.hash for aid, _ in f.ordered() for m in f.read_archive(aid).messages)


def _run(root, syn, now, offload):
    node, state = _control(root, syn, now, offload)
    try:
        node.start()                   # recover, build the missed whole windows
        node.apply_retention()
    finally:
        node.close()
        state.close()


# ---- tests --------------------------------------------------------------------------------------------------------

def test_offloaded_build_and_retention_equal_in_process(tmp_path, offloader):
    syn, source = _source(tmp_path)
    now = syn.start + 7 * WEEK + 2 * 3600           # 30-day retention: the oldest windows are due to go
    _run(tmp_path / "in-process", syn, now, None)
    _run(tmp_path / "offloaded", syn, now, offloader)
    assert offloader.done["build_job"] == 1 and offloader.done["torrent_window_ids"] >= 1   # the worker did it
    ref = _files(tmp_path / "in-process", syn.community_id)
    assert _files(tmp_path / "offloaded", syn.community_id) == ref
    assert len(ref[2]) < len(source)               # retention deleted (proven) rows in both


@pytest.mark.parametrize("kill_after", [0, 2, 4])
def test_worker_killed_mid_build_is_a_crash_there(tmp_path, offloader, monkeypatch, kill_after):
    from core.archive.build import torrent_path
    from core.archive.verify import verify_folder
    from core.node import control
    syn, source = _source(tmp_path)
    now = syn.start + 5 * WEEK + 2 * 3600
    _run(tmp_path / "ref", syn, now, None)
    root = tmp_path / "killed"
    node, state = _control(root, syn, now, offloader)
    monkeypatch.setattr(control, "build_job", functools.partial(build_then_die, kill_after=kill_after))
    try:
        with pytest.raises(WorkerDied, match="killed by signal 9"):
            node.archive_now()
        archived = _archived(root, syn.community_id)
        stored = _files_hashes(root)
        assert not [h for h in source if h not in stored and not archived[h]]     # none lost
        assert not [h for h, n in archived.items() if n > 1]                        # none in two archives
    finally:
        node.close()
        state.close()
    monkeypatch.undo()
    _run(root, syn, now, offloader)                 # the restart: repairs and finishes, in a worker again
    assert _files(root, syn.community_id) == _files(tmp_path / "ref", syn.community_id)
    rep = verify_folder(root / "archivedata" / syn.community_id, torrent_path(root / "torrents", syn.community_id))
    assert rep.ok, [f"{f.code}: {f.message}" for f in rep.findings]


def _files_hashes(root: Path) -> set[bytes]:
    return {h for (h,) in sqlite3.connect(root / "messages.sqlite").execute("SELECT hash FROM waku_messages")}


def test_progress_comes_back_and_errors_keep_their_code(offloader):
    seen = []
    pid = offloader.run(count_job, 5, progress=lambda *a: seen.append(a))
    assert seen == [(i, 5) for i in range(1, 6)] and pid != os.getpid()
    with pytest.raises(ArchiveError) as err:
        offloader.run(failing_job)
    assert (type(err.value), err.value.code, err.value.archive_id) == (ArchiveError, "some-code", "abc")
    assert offloader.run(count_job, 0, progress=lambda *a: None) == pid       # the idle worker is used again


def test_a_job_right_after_warm_takes_the_worker_it_starts(offloader):
    """The engine warms the pool when its first community comes and that community's first job follows at once:
    the job waits for the worker being started instead of starting a second interpreter."""
    offloader.warm()
    pid = offloader.run(count_job, 0, progress=lambda *a: None)
    assert pid != os.getpid() and offloader.started == 1       # before: 2, the second one stopped at once
    assert offloader.run(count_job, 0, progress=lambda *a: None) == pid and offloader.started == 1


def test_a_failed_warm_up_leaves_the_first_job_to_start_a_worker(offloader, monkeypatch):
    from core.node import offload
    real, made = offload._Worker, []

    def first_fails(*args):
        made.append(args)
        if len(made) == 1:
            raise OSError("no interpreter")
        return real(*args)
    monkeypatch.setattr(offload, "_Worker", first_fails)
    offloader.warm()
    assert offloader.run(count_job, 0, progress=lambda *a: None) != os.getpid()
    assert offloader.started == 2 and len(made) == 2


def test_cancel_stops_the_worker(offloader):
    cancel = threading.Event()
    pids = []

    def progress(pid):
        pids.append(pid)
        cancel.set()                                   # the job is running now in the worker: cancel it
    with pytest.raises(JobCancelled):
        offloader.run(pid_then_block, progress=progress, cancel=cancel)
    assert not _alive(pids[0])


def _alive(pid: int) -> bool:
    """False once `pid` has exited (a zombie that nobody reaped yet counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_exit(pid: int, timeout: float) -> bool:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)    # readable when the process has ended
        return bool(ready) or not _alive(pid)
    finally:
        os.close(fd)


PARENT = """
import sys, threading
from core.node.offload import Offloader
from tests.integration.node.test_offload import pid_then_block
off = Offloader()
off.run(pid_then_block, progress=lambda pid: print(pid, flush=True))
"""


def test_worker_dies_with_its_parent(tmp_path):
    """The node's process killed with SIGKILL while its worker builds or imports: the worker does not go on writing
    behind the restarted node's back."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    worker = int(parent.stdout.readline())
    assert _alive(worker)
    parent.kill()
    parent.wait(30)
    assert _wait_exit(worker, 10), "the worker outlived its parent"


def test_offloaded_import_equals_in_process_and_a_killed_worker_writes_nothing(tmp_path, offloader, monkeypatch):
    import random
    from core.node import events as E, hydrate
    from core.node.clock import FakeClock
    from core.node.community import CommunityConfig, NodePaths
    from core.node.member import MemberNode
    from core.storage.archive_state import ArchiveStateDB
    from core.storage.history import HistoryWriteError
    from core.storage.member_history import MemberHistory
    from tests.support.chunked import COMMUNITY, build_folder, random_messages
    ms = random_messages(random.Random(4), 4, 900)
    results = {}
    for name, off in (("in-process", None), ("offloaded", offloader)):
        paths = NodePaths(tmp_path / name).ensure()
        history = MemberHistory(paths.history_db)
        hyd = hydrate.reference_hydrator(history)
        if off is not None:
            hyd = hydrate.offloaded_hydrator(off, hyd, None)
        state = ArchiveStateDB(paths.state_db)
        node = MemberNode(CommunityConfig(community_id=COMMUNITY, role="member"), paths, state, E.EventBus(),
                          FakeClock(), hydrator=hyd)
        index = build_folder(paths.archive_dir / COMMUNITY, ms, cap=8_000, weeks=4).entries
        if off is not None:                            # first a worker killed inside the first window's transaction
            monkeypatch.setattr(hydrate, "hydrate_job", hydrate_then_die)
            with pytest.raises(HistoryWriteError) as err:
                node.import_archives(index, list(index))
            assert err.value.code == "worker-died"
            assert history.count(COMMUNITY) == 0 and not history.imported_archive_ids(COMMUNITY)
            monkeypatch.undo()
        node.import_archives(index, list(index))
        results[name] = (history.messages(COMMUNITY, limit=10 ** 6), history.imported_archive_ids(COMMUNITY))
        state.close()
        history.close()
    assert offloader.done["hydrate_job"] >= 4                  # every window went through the worker
    assert results["offloaded"] == results["in-process"]
    assert len(results["offloaded"][0]) == len({m.hash for m in ms})       # every message once


def test_engines_share_one_worker_pool_and_offload_the_member_import(tmp_path):
    from core.node.community import CommunityConfig
    from core.node.engine import Engine
    from core.node.hydrate import reference_hydrator
    from core.storage.member_history import MemberHistory
    from tests.support.chunked import COMMUNITY
    (tmp_path / "m").mkdir()
    history = MemberHistory(tmp_path / "m" / "history.sqlite")
    member = Engine(tmp_path / "m", hydrator=reference_hydrator(history), offload=True)
    control = Engine(tmp_path / "c", offload=True)
    try:
        assert member.offloader is control.offloader is not None                     # Offloader.shared()
        member.add_community(CommunityConfig(community_id=COMMUNITY, role="member")).result(30)
        hyd = member.nodes[COMMUNITY].hydrator
        assert getattr(hyd, "offloaded", False) and hyd.imported == history.imported_archive_ids
        plain = Engine(tmp_path / "p", hydrator=reference_hydrator(history))          # offload off: as before
        plain.add_community(CommunityConfig(community_id=COMMUNITY, role="member")).result(30)
        assert not getattr(plain.nodes[COMMUNITY].hydrator, "offloaded", False) and plain.offloader is None
        plain.stop()
    finally:
        shared = member.offloader
        member.stop()
        control.stop()
        history.close()
    assert shared._closed                                        # the last engine's stop closed it


def test_the_shared_worker_starts_with_the_first_community_not_with_the_engine(tmp_path, monkeypatch):
    """A window without a community (the first run, Settings) starts no worker process; the first community
    starts it in the background, before its first job needs it."""
    from core.node.community import CommunityConfig
    from core.node.engine import Engine
    from tests.support.chunked import COMMUNITY
    monkeypatch.setattr(Offloader, "_shared", None)      # this engine's own, whatever engines this process runs
    monkeypatch.setattr(Offloader, "_shared_users", 0)
    warmed = []
    warm = Offloader.warm
    monkeypatch.setattr(Offloader, "warm", lambda self: (warmed.append(self), warm(self))[1])
    engine = Engine(tmp_path / "m", offload=True)
    try:
        off = engine.offloader
        assert warmed == [] and off.started == 0                  # no worker asked for
        engine.add_community(CommunityConfig(community_id=COMMUNITY, role="member")).result(30)
        assert warmed == [off]                                     # started in the background by the first one
        assert off.run(count_job, 0, progress=lambda *a: None) != os.getpid()    # jobs run in a worker
    finally:
        engine.stop()


def test_engine_stop_cancels_the_job_its_worker_is_running(tmp_path):
    """Quit during a build, an import or the authors pass (minutes at 1M messages): the engine's stop kills the
    worker of the job that its community queue runs instead of waiting for it, says nothing of it as a failure,
    and the job is what a crash at that point leaves (the next start finishes it)."""
    from core.node import events as E
    from core.node.community import CommunityConfig
    from core.node.engine import Engine
    from tests.support.chunked import COMMUNITY
    engine = Engine(tmp_path / "m", offload=True)
    errors = []
    engine.bus.subscribe(lambda ev: errors.append(ev) if ev.name == E.ERROR else None)
    engine.add_community(CommunityConfig(community_id=COMMUNITY, role="member")).result(30)
    pids, running = [], threading.Event()
    job = engine.submit(COMMUNITY, lambda: engine._offload.run(
        pid_then_block, progress=lambda pid: (pids.append(pid), running.set())))
    assert running.wait(60)
    engine.stop()                       # before the fix: waited for the job, which never ends
    with pytest.raises(JobCancelled, match="cancelled"):
        job.result(0)
    assert _wait_exit(pids[0], 10) and errors == []
    with pytest.raises(JobCancelled, match="engine is stopping"):
        engine._offload.run(count_job, 1)   # nothing new starts once stopping
