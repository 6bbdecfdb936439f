"""The windows share the process's one SparkOwner (gui/spark_share.py): the last window to close closes it, never
one that another window still holds, and never a session that was running before any window took it. The owners
are real SparkOwners of the test's own (the process's default one may be another test's session, under xdist);
only the last test starts a JVM (ARCHIVIST_SLOW=1)."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QSettings

from core.pipeline.session import SparkOwner, SparkSettings
from gui import spark_share
from gui.main_window import MainWindow


@pytest.fixture
def two_windows(qtbot, tmp_path):
    from gui.app import make_app
    make_app()
    ws = []
    for name in ("a", "b"):
        w = MainWindow(settings=QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        ws.append(w)
    yield ws
    for w in ws:
        w.close()
        assert w.ops.pool.waitForDone(10_000)


def test_the_last_window_to_close_closes_the_owner(two_windows):
    a, b = two_windows
    owner = spark_share.hold(a, owner=SparkOwner())
    assert spark_share.hold(b, owner=owner) is owner and a.spark_owner is owner and spark_share.holders(owner) == 2
    spark_share.hold(a, owner=owner)
    assert spark_share.holders(owner) == 2                          # holding twice is one hold
    a.close()
    assert a.spark_owner is None and spark_share.holders(owner) == 1
    assert owner.thread.is_alive()                                  # b still holds it: not closed under b
    b.close()
    assert spark_share.holders(owner) == 0
    assert not owner.thread.is_alive()                              # the last one out closed it


def test_new_settings_close_the_owner_whoever_holds_it(two_windows):
    a, b = two_windows
    owner = spark_share.hold(a, owner=SparkOwner())
    spark_share.hold(b, owner=owner)
    spark_share.release(a, timeout=10, force=True)                 # what node_settings.restart_node does
    assert not owner.thread.is_alive() and a.spark_owner is None
    fresh = spark_share.hold(a, owner=SparkOwner())
    assert fresh.thread.is_alive()
    b.close()                                                       # b's stale owner is already closed
    assert fresh.thread.is_alive()
    a.close()
    assert not fresh.thread.is_alive()


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("ARCHIVIST_SLOW") != "1", reason="starts a JVM: ARCHIVIST_SLOW=1")
def test_a_session_started_before_any_window_is_left_running(two_windows):
    a, _b = two_windows
    owner = SparkOwner(SparkSettings(master="local[1]"))            # as the pipeline tests' session-wide owner
    owner.warm().result(600)
    try:
        assert spark_share.hold(a, owner=owner) is owner
        a.close()
        assert owner.thread.is_alive() and owner.spark_if_started is not None
    finally:
        owner.close()
