"""Cluster mode: a standalone master + worker on 127.0.0.1 from the installed pyspark runs the build job."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.archive.build import build_archives
from core.pipeline.cluster import StandaloneCluster
from core.synth import synthesize

from .helpers import folder_bytes

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("ARCHIVIST_SLOW") != "1",
                                 reason="starts three JVMs (~1-2 min); set ARCHIVIST_SLOW=1")]


def test_build_on_standalone_cluster_equals_reference(tmp_path):
    r = synthesize(tmp_path / "db.sqlite", messages=5000, weeks=3, seed=5)
    topic_args = [x for t in r.topics for x in ("--topic", t)]
    ref = build_archives(tmp_path / "db.sqlite", r.community_id, [bytes.fromhex(t[2:]) for t in r.topics],
                         tmp_path / "ref", tmp_path / "ref-t", end=r.end)
    with StandaloneCluster(tmp_path / "cluster", cores=2, memory="1g") as cluster:
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        out = subprocess.run(
            [sys.executable, "-m", "core.cli", "spark-build", "--master", cluster.master_url, "--db",
             str(tmp_path / "db.sqlite"), "--community-id", r.community_id, *topic_args, "--data-dir",
             str(tmp_path / "spark"), "--torrent-dir", str(tmp_path / "spark-t"), "--end", str(r.end), "--json"],
            capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        # The executors really ran on the worker: it keeps an application folder with executor logs.
        assert list((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))
    res = json.loads(out.stdout)
    assert res["infohash"] == ref.infohash and res["new_archive_ids"] == ref.new_archive_ids
    assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
    assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")
    assert cluster.master.proc.poll() is not None and cluster.worker.proc.poll() is not None
