"""The window shows a Spark job's failure in the same words as the command line (issue 16): an owner whose node
builds on a standalone Spark master with no worker presses "Archive now"; within the executor timeout the window
says why (status bar, the owner view, the Log), and nothing is written. Real parts: Spark's own master (no
worker), the node's own SparkSession, the real window (offscreen).

The window runs in a child process of its own: a process has one JVM, and under xdist this test's worker may
already run a local-mode SparkSession for other tests, whose JVM (and its environment) a cluster session in the
same process would inherit. The child prints what is on screen as one JSON line.

Time: the child starts (imports, window, message store) while the parent starts the master, and reads the master's
URL from its stdin only when it writes the node's config; the executor timeout is 1 s (the watchdog's rule itself is
tests/unit/pipeline's). What remains is the driver's JVM and pyspark's imports in the child."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[2]


EXECUTOR_TIMEOUT = 1.0   # s: the node's [spark] executor_timeout in this test


def child(home: str) -> None:
    """The scenario, in a fresh process: an owner's node on the master whose URL comes on stdin, messages in its
    store, Archive now."""
    os.environ.update(HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_DATA_HOME=f"{home}/.local/share",
                      ARCHIVIST_NO_SPARK="1", QT_QPA_PLATFORM="offscreen")
    import core.node.runner  # noqa: F401 - the node's modules before PySide6: shiboken's import hook reads the
    import core.waku.node    # noqa: F401   source of every module imported after it (minutes for libp2p here)
    import core.pipeline.build     # noqa: F401 - and the driver's: pyspark, and what its first py4j call imports
    import pyspark.testing.utils   # noqa: F401   (pandas, pyarrow), while the parent's master is still starting
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from core.archive.codec import ArchiveMessage
    from core.node.config import load, save
    from core.status.topics import status_topic
    from core.storage import waku_messages
    from gui.app import make_app, start_node_in_background
    from gui.main_window import MainWindow
    from tests.gui.test_settings_engine import CHANNEL, owner_config
    app = make_app()
    app.setQuitOnLastWindowClosed(False)
    cid, path = owner_config(Path(home))
    s = load(path)
    now = int(time.time())
    con = waku_messages.connect(s.data_dir / "messages.sqlite")
    waku_messages.insert_messages(con, [ArchiveMessage(b"\x04" + bytes(64), now - 7200 + i,
                                                       status_topic(cid + CHANNEL), b"chat %d" % i,
                                                       hash=bytes([i]) * 32) for i in range(1, 30)])
    con.commit()
    con.close()
    w = MainWindow(settings=QSettings(f"{home}/gui.ini", QSettings.Format.IniFormat))
    w.show()
    master = sys.stdin.readline().strip()      # the parent's master is up
    s.spark_master, s.spark_executor_timeout, s.spark_build = master, EXECUTOR_TIMEOUT, True
    path.unlink()
    save(s, path, {cid + CHANNEL: "general"})

    def wait(cond, seconds: float) -> None:
        end = time.monotonic() + seconds
        loop = QEventLoop()
        while not cond() and time.monotonic() < end:
            QTimer.singleShot(50, loop.quit)
            loop.exec()    # Qt's event loop runs meanwhile, as in qtbot.waitUntil. Not QTest.qWait: it holds the
            #                GIL while it waits, so the node's threads got one step per call (each py4j call of the
            #                driver ~50 ms: a 15-20 s build start, all of it idle)
        assert cond(), f"timed out; status bar: {w.statusBar().currentMessage()!r}; log: " + \
            repr([str(r) for r in w.log.model.rows()][-5:])
    start_node_in_background(w, path)
    wait(lambda: w.running_node is not None and w.adapter is not None and bool(w.adapter.snapshot), 120)
    node = w.running_node
    w.archive_now(cid)
    wait(lambda: "Build failed" in w.control.build_status.text(), 240)
    print(json.dumps({"status": w.statusBar().currentMessage(), "build": w.control.build_status.text(),
                      "log": [str(r) for r in w.log.model.rows()], "master": node.settings.spark_master,
                      "builder": node.engine.builder is not None,
                      "index": (s.data_dir / "archivedata" / cid / "index").exists()}), flush=True)
    w.close()
    node.stop() if hasattr(node, "stop") else None
    os._exit(0)        # the JVM and the node's threads go with the process


def test_archive_now_on_a_cluster_without_workers_shows_the_reason(tmp_path):
    from core.pipeline.cluster import StandaloneCluster
    from tests.integration.pipeline.cli_runner import daemon_env
    home = tmp_path / "home"
    home.mkdir()
    p = subprocess.Popen([sys.executable, "-c", "import sys; from tests.gui.test_spark_failure_reason import child; "
                          "child(sys.argv[1])", str(home)], cwd=ROOT, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with StandaloneCluster(tmp_path / "cluster", worker=False, env=daemon_env()) as cluster:
            out, err = p.communicate(cluster.master_url + "\n", timeout=540)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, out[-2000:] + err[-3000:]
    shown = json.loads(out.strip().splitlines()[-1])
    reason = f"no Spark worker is available at {cluster.master_url}"
    assert shown["master"] == cluster.master_url and shown["builder"]
    assert "archive now failed" in shown["status"] and reason in shown["status"], shown["status"]
    assert shown["build"].startswith("Build failed")
    assert any(reason in row for row in shown["log"]), "the Log names the reason too"
    assert not shown["index"]                                                  # nothing was written
