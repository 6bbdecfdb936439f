"""GUI test fixtures: real archive folders (synthesized store -> build_archives), real Qt widgets offscreen."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def no_quit_on_last_window(qapp):
    """Tests close their last window often. In the app that quits the event loop; here no loop runs but
    qtbot's waits, and a quit requested there leaves Qt refusing to run the next test's waits (its clicks and
    timers then do nothing). Tests of quitting call gui.lifecycle.quit_application, which quits only a running
    run_gui loop, or run the real app in a subprocess."""
    qapp.setQuitOnLastWindowClosed(False)
    yield
    qapp.setQuitOnLastWindowClosed(False)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty home folder (platformdirs and Qt's settings resolve under it); no config, no Spark warm-up."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(h / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(h / ".local" / "share"))
    monkeypatch.delenv("ARCHIVIST_CONFIG", raising=False)
    monkeypatch.setenv("ARCHIVIST_NO_SPARK", "1")
    return h


@pytest.fixture(scope="session")
def built_community(tmp_path_factory) -> dict:
    """A small real community: 3000 messages over 6 weeks, archives + torrent built by the reference path."""
    from core.archive.build import build_archives
    from core.synth import synthesize
    root = tmp_path_factory.mktemp("community")
    s = synthesize(root / "messages.sqlite", messages=3000, weeks=6, channels=3, seed=11)
    topics = [bytes.fromhex(t[2:]) for t in s.topics]
    res = build_archives(s.path, s.community_id, topics, root / "archivedata", root / "torrents", end=s.end)
    assert len(res.new_archive_ids) >= 5
    return {"root": root, "synth": s, "topics": topics, "result": res,
            "folder": root / "archivedata" / s.community_id, "torrent": Path(res.torrent_path)}


@pytest.fixture
def community_copy(built_community, tmp_path) -> dict:
    """A private copy (archivedata/<id> + torrents/<id>.torrent) that a test may corrupt."""
    dst = tmp_path / "copy"
    shutil.copytree(built_community["root"] / "archivedata", dst / "archivedata")
    shutil.copytree(built_community["root"] / "torrents", dst / "torrents")
    cid = built_community["synth"].community_id
    return {**built_community, "folder": dst / "archivedata" / cid, "torrent": dst / "torrents" / f"{cid}.torrent"}


@pytest.fixture
def ops(qtbot):
    from gui.operations import Operations
    o = Operations()
    yield o
    assert o.shutdown(10_000), "background operations did not finish"


@pytest.fixture
def settings(tmp_path):
    from PySide6.QtCore import QSettings
    return QSettings(str(tmp_path / "archivist.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings):
    """The real main window (no engine attached), closed and its workers joined at the end."""
    from gui.app import make_app
    from gui.main_window import MainWindow
    make_app()
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()
    assert w.ops.pool.waitForDone(10_000)


@pytest.fixture
def nodes(tmp_path):
    """A real owner engine and member engine on 127.0.0.1 (libtorrent, SQLite, signed links), fake clock."""
    pytest.importorskip("core.node.engine")
    from core.node.clock import FakeClock
    from gui.demo import DemoNodes
    d = DemoNodes(tmp_path / "demo", weeks=8, messages=1200, settle=0.0, tick_seconds=0.2,
                  clock=FakeClock(1_760_000_000)).start()
    yield d
    d.stop()
