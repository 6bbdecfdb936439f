"""`spark-build --stage-dir` on a standalone cluster whose worker cannot see the driver's data folder.

The worker (and so every executor it starts) runs in its own mount namespace (`unshare -m`) in which the folder
holding the SQLite store and the output folders is covered by an empty tmpfs (the `hidden_worker` fixture of
conftest.py, shared with test_hidden_checkout.py: the checkout is hidden too). Without a stage the executors open
the store, so the job fails with one line naming the store and the host (exit 1). With `--stage-dir` on a folder
both sides see, the build succeeds and its folder and torrent are byte-identical to the single-process `build`:
the executors read only the stage. The stage's job folder is gone afterwards. A stage inside the hidden folder
(the driver sees it, the worker does not) fails the job with the one line naming the path and the host, exit 1,
nothing written and no stage folder left. `spark-hydrate --stage-dir` of the built folder into a member DB on
the hidden disk gives the rows of the single-process `import`; without the stage it fails with one line naming
the `data` file and the host. The five commands run in one process (cli_runner.py: one driver JVM, each command
its own SparkContext). Needs root (mount namespaces); skipped with the reason otherwise.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from core.archive.build import build_archives
from core.synth import synthesize

from .cli_runner import ROOT, CliSession
from .helpers import folder_bytes, history_tables

# one xdist worker runs both files (make test: --dist loadgroup), so that they share one hidden-checkout cluster
pytestmark = [pytest.mark.spark, pytest.mark.timeout(900), pytest.mark.xdist_group("hidden_worker")]


def test_executors_read_only_the_stage(hidden_worker, tmp_path):
    runner = CliSession(log=tmp_path / "runner.log")
    try:
        runner.warm("spark://127.0.0.1:7077")   # the driver's JVM starts while the store is made
        hidden = hidden_worker.hidden / tmp_path.name   # the driver's own disk: store and output
        hidden.mkdir()
        db = hidden / "store.sqlite"
        r = synthesize(db, messages=1000, weeks=3, seed=11)
        topics = [bytes.fromhex(t[2:]) for t in r.topics]
        ref = build_archives(db, r.community_id, topics, tmp_path / "ref", tmp_path / "ref-t", end=r.end)
        assert len(ref.new_archive_ids) >= 3
        imported = subprocess.run(
            [sys.executable, "-m", "core.cli", "import", str(tmp_path / "ref" / r.community_id), "--history",
             str(tmp_path / "ref.sqlite"), "--community-id", r.community_id, "--all", "--json"],
            capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert imported.returncode == 0, imported.stderr[-3000:]
        stage = tmp_path / "stage"
        cluster = hidden_worker.wait()
        master = cluster.master_url

        def spark_build(data, torrents, *extra):
            return runner.run("spark-build", "--master", master, "--db", str(db), "--community-id", r.community_id,
                              *[x for t in r.topics for x in ("--topic", t)], "--data-dir", str(data),
                              "--torrent-dir", str(torrents), "--end", str(r.end), "--json",
                              "--executor-timeout", "120", *extra)

        # The worker's view of the driver's folder is the empty tmpfs (its mount namespace, through /proc).
        assert os.listdir(f"/proc/{cluster.worker.proc.pid}/root{hidden_worker.hidden}") == []
        assert os.listdir(hidden) != []

        apps = hidden_worker.apps()
        rc, out, err = spark_build(hidden / "data", hidden / "torrents", "--stage-dir", str(stage))
        assert rc == 0, err[-3000:]
        assert [list(a.glob("*/stderr")) != [] for a in hidden_worker.apps() - apps] == [True]   # its executors
        assert stage.is_dir() and list(stage.iterdir()) == []                 # the job's stage folder is gone
        res = json.loads(out)
        assert res["new_archive_ids"] == ref.new_archive_ids and res["infohash"] == ref.infohash
        assert folder_bytes(hidden / "data") == folder_bytes(tmp_path / "ref")
        assert folder_bytes(hidden / "torrents") == folder_bytes(tmp_path / "ref-t")

        # Control: without the stage the executors open the store, which they cannot see: one line, exit 1.
        rc, out, err = spark_build(hidden / "data3", hidden / "torrents3")
        assert rc == 1, err[-3000:]
        assert err.strip().splitlines()[-1] == (
            f"archivist spark-build: the Spark executor on host {socket.gethostname()} cannot open the message "
            f"store {db}: give --stage-dir (a folder shared by this machine and every worker), or put the store "
            "at the same path on every worker; nothing was written"), err[-3000:]
        assert "Traceback" not in err and not list((hidden / "data3").rglob("index"))

        # Hydrate the built folder into a member DB on the driver's disk: same rows as the single-process import.
        folder = hidden / "data" / r.community_id
        rc, out, err = runner.run("spark-hydrate", "--folder", str(folder), "--community-id", r.community_id,
                                  "--db", str(hidden / "member.sqlite"), "--all", "--master", master,
                                  "--executor-timeout", "120", "--json", "--stage-dir", str(stage))
        assert rc == 0, err[-3000:]
        assert json.loads(out)["messages"] == r.messages
        assert history_tables(hidden / "member.sqlite") == history_tables(tmp_path / "ref.sqlite")
        assert list(stage.iterdir()) == []
        # ... and without the stage the executors cannot read `data`: one line, exit 1, nothing imported.
        rc, out, err = runner.run("spark-hydrate", "--folder", str(folder), "--community-id", r.community_id,
                                  "--db", str(hidden / "member2.sqlite"), "--all", "--master", master,
                                  "--executor-timeout", "120")
        assert rc == 1, err[-3000:]
        assert err.strip().splitlines()[-1] == (
            f"archivist spark-hydrate: the Spark executor on host {socket.gethostname()} cannot open the downloaded "
            f"archives {folder / 'data'}: give --stage-dir (a folder shared by this machine and every worker), or "
            "put the folder at the same path on every worker; nothing was imported"), err[-3000:]
        assert "Traceback" not in err and history_tables(hidden / "member2.sqlite")[1] == []

        # A stage the driver sees but the worker does not: one line naming the path and the host, exit 1.
        unseen = hidden / "stage"
        rc, out, err = spark_build(hidden / "data2", hidden / "torrents2", "--stage-dir", str(unseen))
        assert runner.close() == 0
    finally:
        runner.kill()
    assert rc == 1, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"archivist spark-build: the Spark executor on host {socket.gethostname()} cannot see "
                           f"the stage folder {unseen}/app-"), err[-3000:]
    assert last.endswith(": --stage-dir must be a folder shared at the same path on every worker (and the driver); "
                         "nothing was written"), last
    assert "Traceback" not in err and out == ""
    assert list(unseen.iterdir()) == []                                        # its job folder was removed
    assert not list((hidden / "data2").rglob("index")) and not (hidden / "torrents2").exists()
    print(f"stage build ok ({len(ref.new_archive_ids)} archives); unseen stage: {last}")
