"""Kill a build process at random points; reopening always gives a consistent folder that lost nothing complete.
The build runs in a child of the tests' fork server (crash_builder.py), killed with SIGKILL."""
import multiprocessing
import random

import pytest

from core.archive.build import recover_community, torrent_path
from core.archive.verify import verify_folder
from core.synth import synthesize

KILLS = 24


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("crash")
    # large payloads so that each weekly append writes several MB and kills land inside writes
    s = synthesize(d / "m.sqlite", messages=6000, weeks=12, channels=2, min_payload=4000, max_payload=9000, seed=5)
    return s


class Builder:
    """crash_builder.build_weeks in a forked child; `next()` is its next report ("" once it has ended)."""

    def __init__(self, store, data_dir, tdir):
        from tests.integration.archive import crash_builder
        from tests.support import forked
        self.reader, writer = multiprocessing.Pipe(duplex=False)
        self.proc = forked.start(crash_builder.build_weeks, writer, store.path, str(data_dir), str(tdir),
                                 store.community_id, ",".join(t[2:] for t in store.topics), store.start, 12)
        writer.close()                         # the child's copy is the only writer: EOF when it ends

    def next(self) -> str:
        assert self.reader.poll(120), "the builder reported nothing for 2 min"
        try:
            return self.reader.recv_bytes().decode()
        except EOFError:
            return ""

    def kill(self, after: float) -> list[str]:
        """SIGKILL `after` seconds on (unless it ended first); then every report it made before it died."""
        self.proc.join(after)
        if self.proc.exitcode is None:
            self.proc.kill()
        self.proc.join(120)
        assert self.proc.exitcode is not None, "the builder did not end"
        rest = []
        while line := self.next():
            rest.append(line)
        self.reader.close()
        return rest


def test_kill_at_random_points(store, tmp_path, fork_server):
    rng = random.Random(20261121)
    outcomes = {"mid-build": 0, "finished": 0}
    for i in range(KILLS):
        data_dir, tdir = tmp_path / f"r{i}" / "data", tmp_path / f"r{i}" / "torrents"
        builder = Builder(store, data_dir, tdir)
        completed: list[str] = []
        finished = False
        # wait for a random number of completed archives, then a random extra moment, then SIGKILL
        target = rng.randrange(0, 12)
        while len(completed) < target:
            line = builder.next()
            finished = line == "done"
            if not line or finished:
                break
            completed.append(line)
        rest = builder.kill(rng.uniform(0, 0.25))
        completed += [line for line in rest if line != "done"]
        outcomes["finished" if finished or "done" in rest else "mid-build"] += 1

        folder, _ = recover_community(data_dir, tdir, store.community_id)
        if not folder.entries:
            assert not completed
            continue
        report = verify_folder(folder.path, torrent_path(tdir, store.community_id))
        assert report.ok, (i, report.findings)
        assert set(completed) <= set(folder.entries), f"kill {i}: lost a completed archive"
        # a rebuild after recovery continues to the same result as an uninterrupted build would
    assert outcomes["mid-build"] >= KILLS // 2, outcomes


def test_recovered_folder_continues_to_identical_bytes(store, tmp_path, fork_server):
    """After a crash and recovery, finishing the build gives exactly the bytes of an uninterrupted build."""
    from core.archive.build import build_archives
    topics = [bytes.fromhex(t[2:]) for t in store.topics]
    for k in range(1, 13):  # the same weekly schedule as the child, uninterrupted
        ref = build_archives(store.path, store.community_id, topics, tmp_path / "ref" / "d", tmp_path / "ref" / "t",
                             end=store.start + k * 7 * 86400)
    builder = Builder(store, tmp_path / "d", tmp_path / "t")
    for _ in range(5):
        builder.next()
    builder.kill(0)
    recover_community(tmp_path / "d", tmp_path / "t", store.community_id)
    built = set(recover_community(tmp_path / "d", tmp_path / "t", store.community_id)[0].entries)
    assert built, "the child was killed before its first archive"
    for k in range(1, 13):
        res = build_archives(store.path, store.community_id, topics, tmp_path / "d", tmp_path / "t",
                             end=store.start + k * 7 * 86400)
    a, b = tmp_path / "ref" / "d" / store.community_id, tmp_path / "d" / store.community_id
    assert (a / "data").read_bytes() == (b / "data").read_bytes()
    assert (a / "index").read_bytes() == (b / "index").read_bytes()
    assert res.infohash == ref.infohash
