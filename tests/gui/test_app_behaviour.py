"""App behaviour with real nodes: Ctrl+Q closes every window and stops the node within 2 s, and the next start
resumes it; the demo's File > Quit ends the demo; long magnet links never widen the window past the screen; the
tray icon says seeding continues and notifies when an archive arrives or a download ends."""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QGuiApplication

from core.node.config import first_run_settings, save
from gui.main_window import STOP_SECONDS, MainWindow

CTRL = Qt.KeyboardModifier.ControlModifier
ID_A = "0x02a3d2fdb9ac335917bf9d46b38d7496c00bbfadbaf832e8aa61d13ac2b4452084"
LINGERING = ("Trio thread", "(_background_cleanup)")    # library threads that outlive stop() (see test_first_run)


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}


@pytest.fixture
def app(qtbot):
    """The QApplication; at the end Quit runs once more, so a failed test leaves no node running."""
    from gui.app import make_app, quit_application
    yield make_app()
    quit_application()


@pytest.fixture
def make_tray(app):
    """Trays made by a test, closed and deleted after it: a tray belongs to the application, which outlives the
    test, and must not keep its windows or engines' signals alive into the next test."""
    from gui.tray import Tray
    made = []

    def make(**kw):
        made.append(Tray(app, **kw))
        return made[-1]
    yield make
    for t in made:
        t.close()
        t.setParent(None)
        t.deleteLater()
    from PySide6.QtCore import QCoreApplication, QEvent
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _settings(home, name="Archivist") -> QSettings:
    return QSettings(str(home / ".config" / "Archivist" / f"{name}.conf"), QSettings.Format.IniFormat)


def test_ctrl_q_closes_every_window_stops_the_node_and_the_next_start_resumes(qtbot, app, home, tmp_path):
    from gui.app import open_start_window
    before = _threads()
    data = tmp_path / "member-data"
    config = save(first_run_settings(role="member", community_id=ID_A, data_dir=data, loopback=True),
                  data / "archivist.toml")
    settings = _settings(home)
    main = open_start_window(settings, config=config)
    qtbot.waitExposed(main)
    assert isinstance(main, MainWindow)
    qtbot.waitUntil(lambda: main.running_node is not None and main.communities.model.rowCount() == 1, timeout=30_000)
    node = main.running_node
    other = MainWindow(settings=_settings(home, "Other"))   # a second window of the same app
    other.show()
    qtbot.waitExposed(other)
    assert main.act_quit.shortcut().toString() == "Ctrl+Q"

    qtbot.keyClick(main, Qt.Key.Key_Q, CTRL)
    assert not main.isVisible() and not other.isVisible()
    qtbot.waitUntil(lambda: not main.node_stopper.is_alive(), timeout=int(STOP_SECONDS * 1000))
    assert node.engine._stop.is_set() and node.torrents._ses is None
    assert main.running_node is None

    again = open_start_window(settings, config=config)     # the next start: straight to the node, same community
    qtbot.waitExposed(again)
    qtbot.waitUntil(lambda: again.communities.model.rowCount() == 1, timeout=30_000)
    assert again.communities.model.rows()[0].community_id == ID_A and again.running_node is not node
    again.act_quit.trigger()                                 # File > Quit: the same action
    qtbot.waitUntil(lambda: not again.node_stopper.is_alive(), timeout=int(STOP_SECONDS * 1000))
    left = lambda: [t.name for t in _threads() - before  # noqa: E731
                    if t.is_alive() and not any(n in t.name for n in LINGERING)]
    qtbot.waitUntil(lambda: not left(), timeout=10_000)


def test_demo_file_quit_ends_the_demo(qtbot, app, home, tmp_path):
    from gui.app import open_demo
    root = tmp_path / "demo"
    owner, member, nodes, _stop = open_demo(root, (_settings(home, "Owner"), _settings(home, "Member")))
    qtbot.waitExposed(owner)
    qtbot.waitUntil(lambda: owner.adapter is not None and member.adapter is not None, timeout=60_000)
    quit_action = next(a for a in owner.menuBar().actions()[0].menu().actions() if a.text() == "Quit")
    assert quit_action is owner.act_quit
    quit_action.trigger()
    assert not owner.isVisible() and not member.isVisible()
    assert nodes.control._stop.is_set() and nodes.member._stop.is_set()
    assert nodes.t_control._ses is None and nodes.t_member._ses is None
    assert not root.exists()


def test_long_values_never_widen_the_window(qtbot, app, home, tmp_path):
    w = MainWindow(settings=_settings(home))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    screen = QGuiApplication.primaryScreen().availableGeometry()
    magnet = "magnet:?xt=urn:btih:" + "ab" * 20 + "&dn=0x02" + "cd" * 32 + "".join(
        f"&tr=udp%3A%2F%2Ftracker{i}.example.org%3A6969%2Fannounce" for i in range(40))
    w.control.magnet.setText(magnet)                          # the owner's seeding panel
    w.stack.setCurrentIndex(1)
    long_path = str(tmp_path / ("x" * 200) / ("y" * 200) / magnet.replace("/", "_")[:2000])
    with qtbot.waitSignal(w.inspector.opened, timeout=10_000):
        w.inspector.open(long_path)                             # "Cannot open <path>: ..."
    assert w.inspector.summary.toolTip().startswith(f"Cannot open {long_path}")
    assert not w.inspector.export_to(long_path + ".html")      # "could not be written to <path>"
    assert long_path in w.inspector.export_note.toolTip()
    for tab in range(4):
        w.tabs.setCurrentIndex(tab)
        qtbot.waitUntil(lambda: w.tabs.currentWidget().isVisible())
        assert w.minimumSizeHint().width() <= screen.width(), tab
        assert w.frameGeometry().width() <= screen.width(), tab


def test_tray_notifies_a_new_archive_and_a_finished_download(qtbot, app, nodes, tmp_path, make_tray):
    """Real owner and member engines on 127.0.0.1; the tray follows both windows' engines."""
    tray = make_tray(available=False)            # as offscreen: no system tray, the notices are still given
    owner = MainWindow(settings=QSettings(str(tmp_path / "o.ini"), QSettings.Format.IniFormat))
    member = MainWindow(settings=QSettings(str(tmp_path / "m.ini"), QSettings.Format.IniFormat))
    for w in (owner, member):
        qtbot.addWidget(w)
        tray.watch(w)
    nodes.add_owner()
    cid = nodes.control_cfg.community_id
    owner.attach_engine(nodes.control)
    member.attach_engine(nodes.member, history=nodes.history_of)    # before the member joins: no event missed
    with qtbot.waitSignal(tray.notified, timeout=60_000) as built:
        nodes.control.archive_now(cid)
    assert built.args[0] == "New archive" and "Sample community" in built.args[1] and "seeding" in built.args[1]
    qtbot.waitUntil(lambda: tray.seeding_count() == 1, timeout=10_000)
    assert tray.tooltip() == "Archivist: seeding 1 community"
    nodes.add_member()
    nodes.run_engines()
    qtbot.waitUntil(lambda: any(t == "Download finished" for t, _ in tray.shown), timeout=90_000)
    titles = [t for t, _ in tray.shown]
    assert titles.index("New archive") < titles.index("Download finished")
    assert titles.count("New archive") >= 2                      # built by the owner, then offered to the member
    assert nodes.member.state.archive_ids(cid, imported=True)


def test_closing_the_window_keeps_seeding_when_there_is_a_tray(qtbot, app, nodes, tmp_path, make_tray):
    tray = make_tray(available=True)             # a desktop with a system tray
    w = MainWindow(settings=QSettings(str(tmp_path / "o.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    tray.watch(w)
    w.show()
    qtbot.waitExposed(w)
    nodes.add_owner()
    w.attach_engine(nodes.control)
    nodes.control.archive_now(nodes.control_cfg.community_id).result(60)
    qtbot.waitUntil(lambda: tray.seeding_count() == 1, timeout=10_000)
    w.close()
    assert not w.isVisible() and w.adapter is not None and not w._shut        # hidden, not shut down
    assert tray.shown[-1][0] == "Archivist keeps running"
    assert tray.tooltip().endswith("(the window is closed; seeding continues)")
    assert tray.icon.toolTip() == tray.tooltip()
    assert not nodes.control._stop.is_set()
    tray.show_windows()
    assert w.isVisible()
    w.act_quit.trigger()                         # Quit really closes, tray or not
    assert not w.isVisible() and w._shut
    tray.close()


def test_without_a_tray_closing_the_window_closes_it(qtbot, app, tmp_path, make_tray):
    tray = make_tray(available=False)
    w = MainWindow(settings=QSettings(str(tmp_path / "o.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    tray.watch(w)
    w.show()
    qtbot.waitExposed(w)
    assert tray.icon is None and not tray.keeps_running(w)
    w.close()
    assert not w.isVisible() and w._shut and tray.shown == []


DEMO_THEN_QUIT = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import gui.app
from gui.main_window import MainWindow

def poll():
    ws = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
    if len(ws) == 2 and all(w.adapter is not None for w in ws):
        print("attached", flush=True)
        ws[0].act_quit.trigger()          # File > Quit in the owner's window
    else:
        QTimer.singleShot(100, poll)

gui.app.make_app()
QTimer.singleShot(100, poll)
code = gui.app.run_gui(demo=True)
print("exec returned", code, flush=True)
"""


def test_demo_quit_ends_the_process(home, tmp_path):
    """The real `archivist demo` loop: File > Quit returns from the event loop and the process exits."""
    import subprocess
    import sys
    from pathlib import Path
    env = {**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen", "TMPDIR": str(tmp_path)}
    p = subprocess.Popen([sys.executable, "-c", DEMO_THEN_QUIT], cwd=Path(__file__).parents[2], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, err[-2000:]
    assert "attached" in out and "exec returned 0" in out
    assert not [d for d in tmp_path.iterdir() if d.name.startswith("archivist-demo-")]   # its folder removed


def test_ctrl_q_during_a_long_worker_job_still_stops_the_node_within_2_s(qtbot, app, home, tmp_path):
    """Quit while the node's worker process runs a job that would take minutes (the authors pass of a 1M-message
    import, a build): the engine kills that worker (what a crash there leaves, which each job survives) instead of
    waiting for it, so the node still stops within STOP_SECONDS and the process does not linger after its window."""
    from gui.app import open_start_window
    from tests.integration.node.test_offload import _wait_exit, pid_then_block
    data = tmp_path / "member-data"
    config = save(first_run_settings(role="member", community_id=ID_A, data_dir=data, loopback=True),
                  data / "archivist.toml")
    main = open_start_window(_settings(home), config=config)
    qtbot.waitExposed(main)
    qtbot.waitUntil(lambda: main.running_node is not None and main.communities.model.rowCount() == 1, timeout=30_000)
    engine = main.running_node.engine
    pids, running = [], threading.Event()
    job = engine.submit(ID_A, lambda: engine._offload.run(pid_then_block,
                                                          progress=lambda pid: (pids.append(pid), running.set())))
    qtbot.waitUntil(running.is_set, timeout=60_000)
    qtbot.keyClick(main, Qt.Key.Key_Q, CTRL)
    qtbot.waitUntil(lambda: not main.node_stopper.is_alive(), timeout=int(STOP_SECONDS * 1000))
    assert job.exception(0).code == "cancelled" and _wait_exit(pids[0], 10)
