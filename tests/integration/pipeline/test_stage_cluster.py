"""`spark-build --stage-dir` on a standalone cluster whose worker cannot see the driver's data folder.

The worker (and so every executor it starts) runs in its own mount namespace (`unshare -m`) in which the folder
holding the SQLite store and the output folders is covered by an empty tmpfs. Without a stage the executors open
the store, so the job fails with one line naming the store and the host (exit 1). With `--stage-dir` on a folder
both sides see, the build succeeds and its folder and torrent are byte-identical to the single-process `build`:
the executors read only the stage. The stage's job folder is gone afterwards. A stage inside the hidden folder
(the driver sees it, the worker does not) fails the job with the one line naming the path and the host, exit 1,
nothing written and no stage folder left. `spark-hydrate --stage-dir` of the built folder into a member DB on
the hidden disk gives the rows of the single-process `import`; without the stage it fails with one line naming
the `data` file and the host. Needs root (mount namespaces); skipped with the reason otherwise.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from core.archive.build import build_archives
from core.pipeline.cluster import StandaloneCluster
from core.synth import synthesize

from .helpers import folder_bytes, history_tables

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
ROOT = str(Path(__file__).resolve().parents[3])
HIDE = 'mount -t tmpfs -o size=1m,mode=700 archivist-hidden "$0" && exec "$@"'


def hidden_prefix(folder: Path) -> tuple[str, ...]:
    """Run a command in a new mount namespace where `folder` is an empty tmpfs (the command must exec on)."""
    return ("unshare", "-m", "--propagation", "private", "sh", "-c", HIDE, str(folder))


def mount_namespace_unavailable(tmp_path: Path) -> str | None:
    if os.geteuid() != 0:
        return "needs root to make a mount namespace (unshare -m) that hides a folder from the worker"
    if shutil.which("unshare") is None:
        return "util-linux's `unshare` is not installed"
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "seen").write_bytes(b"")
    r = subprocess.run([*hidden_prefix(probe), "sh", "-c", 'ls -A "$1"', "sh", str(probe)], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0 or r.stdout.strip():
        return f"cannot hide a folder in a mount namespace here: {(r.stderr or r.stdout).strip()}"
    return None


def spark_build(r, db: Path, data: Path, torrents: Path, master: str, *extra: str) -> subprocess.CompletedProcess:
    topics = [x for t in r.topics for x in ("--topic", t)]
    return subprocess.run(
        [sys.executable, "-m", "core.cli", "spark-build", "--master", master, "--db", str(db), "--community-id",
         r.community_id, *topics, "--data-dir", str(data), "--torrent-dir", str(torrents), "--end", str(r.end),
         "--json", "--executor-timeout", "120", *extra],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})


def test_executors_read_only_the_stage(tmp_path):
    reason = mount_namespace_unavailable(tmp_path)
    if reason:
        pytest.skip(reason)
    hidden = tmp_path / "driver"          # the driver's own disk: store and output; the worker never sees it
    hidden.mkdir()
    db = hidden / "store.sqlite"
    r = synthesize(db, messages=3000, weeks=3, seed=11)
    topics = [bytes.fromhex(t[2:]) for t in r.topics]
    ref = build_archives(db, r.community_id, topics, tmp_path / "ref", tmp_path / "ref-t", end=r.end)
    assert len(ref.new_archive_ids) >= 3
    imported = cli("import", str(tmp_path / "ref" / r.community_id), "--history", str(tmp_path / "ref.sqlite"),
                   "--community-id", r.community_id, "--all", "--json")
    assert imported.returncode == 0, imported.stderr[-3000:]
    stage = tmp_path / "stage"

    with StandaloneCluster(tmp_path / "cluster", cores=2, memory="1g",
                           worker_prefix=hidden_prefix(hidden)) as cluster:
        # The worker's view of the driver's folder is the empty tmpfs (its mount namespace, through /proc).
        assert os.listdir(f"/proc/{cluster.worker.proc.pid}/root{hidden}") == []
        assert os.listdir(hidden) != []

        out = spark_build(r, db, hidden / "data", hidden / "torrents", cluster.master_url, "--stage-dir", str(stage))
        assert out.returncode == 0, out.stderr[-3000:]
        assert list((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))   # the worker's executors ran it
        assert stage.is_dir() and list(stage.iterdir()) == []                 # the job's stage folder is gone
        res = json.loads(out.stdout)
        assert res["new_archive_ids"] == ref.new_archive_ids and res["infohash"] == ref.infohash
        assert folder_bytes(hidden / "data") == folder_bytes(tmp_path / "ref")
        assert folder_bytes(hidden / "torrents") == folder_bytes(tmp_path / "ref-t")

        # Control: without the stage the executors open the store, which they cannot see: one line, exit 1.
        direct = spark_build(r, db, hidden / "data3", hidden / "torrents3", cluster.master_url)
        assert direct.returncode == 1, direct.stderr[-3000:]
        assert direct.stderr.strip().splitlines()[-1] == (
            f"archivist spark-build: the Spark executor on host {socket.gethostname()} cannot open the message "
            f"store {db}: give --stage-dir (a folder shared by this machine and every worker), or put the store "
            "at the same path on every worker; nothing was written"), direct.stderr[-3000:]
        assert "Traceback" not in direct.stderr and not list((hidden / "data3").rglob("index"))

        # Hydrate the built folder into a member DB on the driver's disk: same rows as the single-process import.
        folder = hidden / "data" / r.community_id
        hydrated = cli("spark-hydrate", "--folder", str(folder), "--community-id", r.community_id, "--db",
                       str(hidden / "member.sqlite"), "--all", "--master", cluster.master_url, "--executor-timeout",
                       "120", "--json", "--stage-dir", str(stage))
        assert hydrated.returncode == 0, hydrated.stderr[-3000:]
        assert json.loads(hydrated.stdout)["messages"] == r.messages
        assert history_tables(hidden / "member.sqlite") == history_tables(tmp_path / "ref.sqlite")
        assert list(stage.iterdir()) == []
        # ... and without the stage the executors cannot read `data`: one line, exit 1, nothing imported.
        direct = cli("spark-hydrate", "--folder", str(folder), "--community-id", r.community_id, "--db",
                     str(hidden / "member2.sqlite"), "--all", "--master", cluster.master_url, "--executor-timeout",
                     "120")
        assert direct.returncode == 1, direct.stderr[-3000:]
        assert direct.stderr.strip().splitlines()[-1] == (
            f"archivist spark-hydrate: the Spark executor on host {socket.gethostname()} cannot open the downloaded "
            f"archives {folder / 'data'}: give --stage-dir (a folder shared by this machine and every worker), or "
            "put the folder at the same path on every worker; nothing was imported"), direct.stderr[-3000:]
        assert "Traceback" not in direct.stderr and history_tables(hidden / "member2.sqlite")[1] == []

        # A stage the driver sees but the worker does not: one line naming the path and the host, exit 1.
        unseen = hidden / "stage"
        bad = spark_build(r, db, hidden / "data2", hidden / "torrents2", cluster.master_url, "--stage-dir",
                          str(unseen))
    assert bad.returncode == 1, bad.stderr[-3000:]
    last = bad.stderr.strip().splitlines()[-1]
    assert last.startswith(f"archivist spark-build: the Spark executor on host {socket.gethostname()} cannot see "
                           f"the stage folder {unseen}/app-"), bad.stderr[-3000:]
    assert last.endswith(": --stage-dir must be a folder shared at the same path on every worker (and the driver); "
                         "nothing was written"), last
    assert "Traceback" not in bad.stderr and bad.stdout == ""
    assert list(unseen.iterdir()) == []                                        # its job folder was removed
    assert not list((hidden / "data2").rglob("index")) and not (hidden / "torrents2").exists()
    print(f"stage build ok ({len(ref.new_archive_ids)} archives); unseen stage: {last}")
