"""The window shows a Spark job's failure in the same words as the command line (issue 16): an owner whose node
builds on a standalone Spark master with no worker presses "Archive now"; within the executor timeout the window
says why (status bar, the owner view, the Log), and nothing is written. Real parts: Spark's own master (no
worker), the node's own SparkSession, the real window."""
from __future__ import annotations

import time

import pytest

from core.archive.codec import ArchiveMessage
from core.node.config import load, save
from core.pipeline.cluster import StandaloneCluster
from core.status.topics import status_topic
from core.storage import waku_messages
from tests.gui.test_settings_engine import CHANNEL, owner_config, running

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def test_archive_now_on_a_cluster_without_workers_shows_the_reason(qtbot, home, window, tmp_path):
    cid, path = owner_config(home)
    with StandaloneCluster(tmp_path / "cluster", worker=False) as cluster:
        s = load(path)
        s.spark_master, s.spark_executor_timeout, s.spark_build = cluster.master_url, 5.0, True
        path.unlink()
        save(s, path, {cid + CHANNEL: "general"})
        now = int(time.time())
        con = waku_messages.connect(s.data_dir / "messages.sqlite")
        waku_messages.insert_messages(con, [ArchiveMessage(b"\x04" + bytes(64), now - 7200 + i,
                                                           status_topic(cid + CHANNEL), b"chat %d" % i,
                                                           hash=bytes([i]) * 32) for i in range(1, 30)])
        con.commit()
        con.close()
        node = running(qtbot, window, path)
        assert node.settings.spark_master == cluster.master_url and node.engine.builder is not None
        window.archive_now(cid)
        qtbot.waitUntil(lambda: "Build failed" in window.control.build_status.text(), timeout=240_000)
        said = window.statusBar().currentMessage()
    reason = f"no Spark worker is available at {cluster.master_url}"
    assert "archive now failed" in said and reason in said, said
    assert any(reason in str(row) for row in window.log.model.rows()), "the Log names the reason too"
    assert not (s.data_dir / "archivedata" / cid / "index").exists()          # nothing was written
