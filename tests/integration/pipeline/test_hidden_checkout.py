"""The shipped code is what runs on the cluster: the worker cannot see the project checkout at all.

The worker (and its executors) runs in its own mount namespace (`unshare -m`) where the checkout is covered by an
empty tmpfs (the `hidden_worker` fixture of conftest.py, shared with test_stage_cluster.py). Its Python environment
stays usable from another path: the venv (inside the checkout here) is bind-mounted elsewhere first, and the
worker's `spark-class`, `SPARK_HOME` and `python3` are taken from there.
A driver started from the checkout then runs a probe job and a build: the executors see an empty checkout folder,
have nothing from it on `sys.path`, import `core` from the shipped zip, and the build's bytes equal the
single-process build. Needs root (mount namespaces); skipped with the reason otherwise.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.archive.build import build_archives
from core.synth import synthesize

from .cli_runner import ROOT
from .helpers import folder_bytes

# one xdist worker runs both files (make test: --dist loadgroup), so that they share one hidden-checkout cluster
pytestmark = [pytest.mark.spark, pytest.mark.timeout(900), pytest.mark.xdist_group("hidden_worker")]

DRIVER = r"""
import json, sys
from core.pipeline.build import submit_build
from core.pipeline.session import SparkOwner, SparkSettings
master, root, db, cid, topics, data, torrents, end = sys.argv[1:]
owner = SparkOwner(SparkSettings(master=master))
def where(spark, job):
    def f(_):
        import os, sys, core, core.archive.codec
        return {"core": core.__file__, "codec": core.archive.codec.__file__, "python": sys.executable,
                "checkout": os.listdir(root), "path": [p for p in sys.path if p.startswith(root)]}
    return spark.sparkContext.parallelize([0], 1).map(f).collect()[0]
probe = owner.submit(where).result(timeout=600)
res = submit_build(owner, db, cid, [bytes.fromhex(t[2:]) for t in topics.split(",")], data, torrents,
                   end=int(end)).result(timeout=600)
owner.close()
print(json.dumps({"probe": probe, "ids": res.new_archive_ids, "infohash": res.infohash}))
"""


def test_executors_run_the_shipped_zip_without_the_checkout(hidden_worker, tmp_path):
    db = tmp_path / "store.sqlite"       # outside the hidden folders: the executors open it (no stage)
    r = synthesize(db, messages=600, weeks=3, seed=21)
    ref = build_archives(db, r.community_id, [bytes.fromhex(t[2:]) for t in r.topics], tmp_path / "ref",
                         tmp_path / "ref-t", end=r.end)
    cluster = hidden_worker.wait()
    python = hidden_worker.python
    assert os.listdir(f"/proc/{cluster.worker.proc.pid}/root{ROOT}") == []   # the worker's view
    out = subprocess.run([sys.executable, "-c", DRIVER, cluster.master_url, str(ROOT), str(db), r.community_id,
                          ",".join(r.topics), str(tmp_path / "spark"), str(tmp_path / "spark-t"), str(r.end)],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    probe = got["probe"]
    assert probe["checkout"] == [] and probe["path"] == [], probe        # nothing of the checkout on the executor
    for f in (probe["core"], probe["codec"]):
        assert "/archivist-core-" in f and ".zip/core/" in f, probe      # imported from the shipped zip
    assert probe["python"] == str(python), probe                        # the worker's python3, from its PATH
    assert got["ids"] == ref.new_archive_ids and got["infohash"] == ref.infohash
    assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
    assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")
    print(f"executors ran {probe['core']} with {probe['python']}; checkout {ROOT} hidden")
