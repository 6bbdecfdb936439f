"""Kill a build process at random points; reopening always gives a consistent folder that lost nothing complete."""
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from core.archive.build import recover_community, torrent_path
from core.archive.verify import verify_folder
from core.synth import synthesize

HERE = Path(__file__).parent
KILLS = 24


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("crash")
    # large payloads so that each weekly append writes several MB and kills land inside writes
    s = synthesize(d / "m.sqlite", messages=6000, weeks=12, channels=2, min_payload=4000, max_payload=9000, seed=5)
    return s


def test_kill_at_random_points(store, tmp_path):
    rng = random.Random(20261121)
    topics_hex = ",".join(t[2:] for t in store.topics)
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent.parent)}
    outcomes = {"mid-build": 0, "finished": 0}
    for i in range(KILLS):
        data_dir, tdir = tmp_path / f"r{i}" / "data", tmp_path / f"r{i}" / "torrents"
        proc = subprocess.Popen([sys.executable, str(HERE / "crash_builder.py"), store.path, str(data_dir), str(tdir),
                                 store.community_id, topics_hex, str(store.start), "12"],
                                stdout=subprocess.PIPE, text=True, env=env)
        completed: list[str] = []
        # wait for a random number of completed archives, then a random extra moment, then SIGKILL
        target = rng.randrange(0, 12)
        while len(completed) < target:
            line = proc.stdout.readline().strip()
            if not line or line == "done":
                break
            completed.append(line)
        try:
            proc.wait(timeout=rng.uniform(0, 0.25))
        except subprocess.TimeoutExpired:
            pass
        proc.kill()
        rest, _ = proc.communicate()
        completed += [l for l in rest.split() if l and l != "done"]
        outcomes["finished" if "done" in rest else "mid-build"] += 1

        folder, _ = recover_community(data_dir, tdir, store.community_id)
        if not folder.entries:
            assert not completed
            continue
        report = verify_folder(folder.path, torrent_path(tdir, store.community_id))
        assert report.ok, (i, report.findings)
        assert set(completed) <= set(folder.entries), f"kill {i}: lost a completed archive"
        # a rebuild after recovery continues to the same result as an uninterrupted build would
    assert outcomes["mid-build"] >= KILLS // 2, outcomes


def test_recovered_folder_continues_to_identical_bytes(store, tmp_path):
    """After a crash and recovery, finishing the build gives exactly the bytes of an uninterrupted build."""
    from core.archive.build import build_archives
    topics = [bytes.fromhex(t[2:]) for t in store.topics]
    for k in range(1, 13):  # the same weekly schedule as the child, uninterrupted
        ref = build_archives(store.path, store.community_id, topics, tmp_path / "ref" / "d", tmp_path / "ref" / "t",
                             end=store.start + k * 7 * 86400)
    topics_hex = ",".join(t[2:] for t in store.topics)
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent.parent)}
    proc = subprocess.Popen([sys.executable, str(HERE / "crash_builder.py"), store.path, str(tmp_path / "d"),
                             str(tmp_path / "t"), store.community_id, topics_hex, str(store.start), "12"],
                            stdout=subprocess.PIPE, text=True, env=env)
    for _ in range(5):
        proc.stdout.readline()
    proc.kill()
    proc.communicate()
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
