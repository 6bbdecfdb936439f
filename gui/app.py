"""Application entry points (`archivist gui`, `archivist demo`; core/appcli.py calls run_gui and run_demo).

Cold start: the window is shown first; everything slow (engine start, Spark warm-up, demo data) runs on
worker threads afterwards, so a window is on screen in well under 2 s."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from gui.lifecycle import _RUNNING, app_tray, on_quit, quit_application  # noqa: F401 (quit_application: re-exported)
from gui.views.settings import fixed_config_path, node_config_target  # noqa: F401 (re-exported)

T0 = time.perf_counter()   # process-relative start, for the cold-start figure


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") in ("offscreen", "minimal"))


def _demo_folder(workdir: Path, log=print) -> Path:
    """Generate a small sample community and build its archives (the reference path)."""
    from core.archive.build import build_archives
    from core.synth import synthesize
    log("demo: generating a sample community with 12 weeks of chat history ...")
    s = synthesize(workdir / "messages.sqlite", messages=5000, weeks=12, channels=3, seed=7)
    log(f"demo: community {s.community_id}, {s.messages} messages on {len(s.topics)} channels")
    res = build_archives(s.path, s.community_id, [bytes.fromhex(t[2:]) for t in s.topics], workdir / "archivedata",
                         workdir / "torrents", end=s.end)
    log(f"demo: built {len(res.new_archive_ids)} archives ({res.data_bytes} bytes); magnet {res.magnet}")
    return workdir / "archivedata" / s.community_id


def make_app(argv: list[str] | None = None):
    """The QApplication with Archivist's name (QSettings keys), icon and style."""
    from PySide6.QtWidgets import QApplication
    from gui import import_hook
    from gui.resources import icon, style_sheet
    import_hook.install()      # PySide6 would read the source of every module imported from now on
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("Archivist")
    app.setOrganizationName("Archivist")
    app.setDesktopFileName("archivist")
    # Style and sheet once per QApplication: setting them again repolishes every live widget (seconds once a test
    # process has made a few hundred windows), and a second call in one process changes nothing.
    sheet = style_sheet()
    if app.styleSheet() != sheet:    # (once the sheet is set, app.style() is Qt's style-sheet proxy)
        app.setStyle("Fusion")
        app.setStyleSheet(sheet)
    app.setWindowIcon(icon("archivist"))
    return app



def create_window(engine: Any = None, folder: Path | None = None, settings=None):
    from gui.main_window import MainWindow
    w = MainWindow(engine=engine, settings=settings)
    w.enable_magnet_fetch()
    if folder is not None:
        w.open_path(folder)
    return w


def start_in_background(window, fn: Callable[[], Any], on_done: Callable[[Any], None], label: str) -> None:
    """Run slow start-up work (engine start, Spark warm-up, demo data) off the GUI thread."""
    window.ops.run(lambda ctx: fn(), on_done=on_done,
                   on_error=lambda e: window.log.add("archivist.startFailed", None, {"what": label, "error": str(e)}),
                   label=label)


def warm_spark(window, spark=None, reason: str | None = None) -> None:
    """Start the process's SparkSession (JVM + one tiny job, ~12 s cold) on worker threads once the window is
    up. `spark`: SparkSettings, a master URL, or None (the defaults). The status bar shows the stage, its progress
    and why anything waits for Spark (gui/views/spark_status.py). The GUI thread never touches Spark; the window
    closes the Spark owner when it closes."""
    from gui.views.spark_status import FAILED, JVM, READY, REASON_ANY, warmup_stage
    t0 = time.perf_counter()

    def work(ctx):
        from core.pipeline.session import SparkSettings
        from gui import spark_share
        settings = spark if isinstance(spark, SparkSettings) else SparkSettings(master=spark) if spark else None
        owner = spark_share.hold(window, settings)   # shared with the node; let go in MainWindow.closeEvent
        job = owner.warm()
        shown = 0.0                          # the warm-up runs several small Spark jobs: the bar never goes back
        while True:                          # report the stage until the job ends (a deadline wait, not a sleep)
            try:
                job.result(0.25)
                return time.perf_counter() - t0
            except TimeoutError:
                stage, fraction = warmup_stage(owner, job)
                if fraction is not None:
                    shown = fraction = min(0.99, max(shown, fraction))
                ctx.report(-1 if fraction is None else int(fraction * 1000), 1000, stage)
            if ctx.cancelled.is_set() or time.perf_counter() - t0 > 600:
                job.cancel()
                raise TimeoutError("Spark did not start within 600 s") if not ctx.cancelled.is_set() else \
                    RuntimeError("Spark warm-up cancelled")

    def ready(seconds: float) -> None:
        window.log.add("archivist.sparkReady", None, {"seconds": round(seconds, 1)})
        window.spark_status.show_stage(READY, 1.0, seconds)
        window.spark_ready.emit(seconds)

    def failed(e: BaseException) -> None:
        text = (str(e).strip().splitlines() or [type(e).__name__])[0]
        window.log.add("archivist.sparkFailed", None, {"error": text})
        window.spark_status.show_stage(FAILED, None, time.perf_counter() - t0, error=text)

    def progress(done: int, _total: int, stage: str) -> None:
        window.spark_status.show_stage(stage, None if done < 0 else done / 1000, time.perf_counter() - t0)
    window.spark_status.reason = reason or REASON_ANY
    window.spark_status.show_stage(JVM, None, 0.0)
    window.ops.run(work, on_done=ready, on_error=failed, on_progress=progress, label="Spark warm-up")


def node_spark(config: Path):
    """(SparkSettings, reason) of the node that `config` describes, or None when it does not build on Spark or
    cannot be read (the node's start says why)."""
    from core.node.config import ConfigError, load
    from core.node.runner import spark_settings
    from gui.views.spark_status import REASON_ANY, REASON_BUILD
    try:
        s = load(config)
    except ConfigError:
        return None
    if not s.spark_build:
        return None
    owns = any(c.role == "control" for c in s.communities)
    return spark_settings(s), REASON_BUILD if owns else REASON_ANY


def start_node_in_background(window, config: Path) -> None:
    """Start the node described by `config` (BitTorrent, Waku, history DB: slow) on a worker thread, attach the
    window to its engine before its communities start (so no event is missed), then start them."""
    def work(ctx):
        from core.node.config import load
        from core.node.runner import start_node
        node = start_node(load(config), communities=False)
        window.running_node = node           # stopped in MainWindow.closeEvent
        window.node_config = Path(config)
        if node.settings.spark_build and window.spark_owner is None:
            from gui import spark_share
            spark_share.hold(window)           # the builder's owner: the last window to close closes it
        return node

    def attach(node) -> None:
        window.attach_engine(node.engine, history=lambda cid, chat, limit, offset: node.history.messages(
            cid, chat_id=chat, limit=limit, offset=offset))
        window.ops.run(lambda ctx: node.start_communities(), label="start communities",
                       on_done=lambda _r: window.refresh(),   # a quiet member emits no event to refresh on
                       on_error=lambda e: window.log.add("archivist.startFailed", None, {"error": str(e)}))
    window.log.add("archivist.nodeStarting", None, {"config": str(config)})
    window.ops.run(work, on_done=attach, label="start node",
                   on_error=lambda e: (window.log.add("archivist.startFailed", None, {"config": str(config),
                                                                                        "error": str(e)}),
                                       window.statusBar().showMessage(f"The node did not start: {e}", 30_000)))


def run_demo(headless: bool = False) -> int:
    if headless or not has_display():
        from gui.demo import run_headless
        with tempfile.TemporaryDirectory(prefix="archivist-demo-") as tmp:
            return run_headless(Path(tmp))
    return run_gui(demo=True)


def start_demo(owner, member, root: Path):
    """Owner and member windows are on screen; now start both nodes (slow) on a worker thread. Its log lines
    reach the window as operation progress (queued to the GUI thread), never by touching widgets directly."""
    from gui.demo import DemoNodes
    nodes = DemoNodes(root)

    def work(ctx):
        nodes.log = lambda s: ctx.report(0, 0, s)
        nodes.start()
        nodes.add_owner()
        nodes.add_member()
        nodes.run_engines()
        return nodes

    def attach(n) -> None:
        owner.attach_engine(n.control)
        member.attach_engine(n.member, history=n.history_of)
        member.tabs.setCurrentIndex(0)
        owner.tabs.setCurrentIndex(0)
    owner.ops.run(work, on_done=attach, label="demo nodes",
                  on_progress=lambda _d, _t, text: owner.log.add("archivist.demo", None, {"step": text}),
                  on_error=lambda e: owner.log.add("archivist.startFailed", None, {"what": "demo", "error": str(e)}))
    return nodes


def open_main(settings=None, *, engine: Any = None, folder: Path | None = None, config: Path | None = None,
              spark: bool = True):
    """Show the main window; start the node of `config` and the Spark warm-up (Settings, $ARCHIVIST_NO_SPARK)
    on worker threads."""
    from gui.views.settings import load
    w = create_window(engine=engine, folder=folder, settings=settings)
    app_tray().watch(w)
    w.show()
    print(f"archivist: window visible after {time.perf_counter() - T0:.2f} s", file=sys.stderr)
    if config is not None:
        start_node_in_background(w, config)
    if spark and load(w.settings)["spark_warmup"] and os.environ.get("ARCHIVIST_NO_SPARK") != "1":
        if config is None:
            warm_spark(w, load(w.settings)["spark_master"] or None)
        elif (ns := node_spark(config)) is not None:      # the node's own [spark] settings: one session for both
            warm_spark(w, *ns)
    return w


def open_start_window(settings=None, *, config: Path | str | None = None):
    """What `archivist gui` shows first: the main window running the configured node, or, when the config file
    does not exist, the welcome screen (gui/views/welcome.py), which writes it and then hands over to the main
    window (or opens the Inspector with no node). Returns the window shown."""
    from PySide6.QtCore import QSettings
    settings = settings if settings is not None else QSettings("Archivist", "Archivist")
    target = node_config_target(settings, config)
    if target.exists():
        return open_main(settings, config=target)
    from gui.main_window import TAB_INSPECTOR
    from gui.views.welcome import WelcomeWindow
    welcome = WelcomeWindow(settings, fixed_config_path(config))

    def created(path: Path) -> None:
        welcome.main_window = open_main(settings, config=path)
        welcome.close()

    def inspect() -> None:
        w = welcome.main_window = open_main(settings, spark=False)
        w.tabs.setCurrentIndex(TAB_INSPECTOR)
        w.inspector.source.setFocus()
        welcome.close()
    welcome.config_written.connect(created)
    welcome.inspect_requested.connect(inspect)
    welcome.show()
    # the same words as the main window's line: installer/smoke.sh waits for "window visible after"
    print(f"archivist: window visible after {time.perf_counter() - T0:.2f} s (first run: welcome screen)",
          file=sys.stderr)
    return welcome


def run_gui(demo: bool = False, folder: Path | None = None, engine: Any = None, config: Path | None = None) -> int:
    from PySide6.QtCore import QSettings
    app = make_app()
    if not demo:
        if engine is not None:
            first = open_main(engine=engine, folder=folder)
        elif folder is not None:           # a folder to inspect; the configured node (if any) runs as well
            target = node_config_target(QSettings("Archivist", "Archivist"), config)
            first = open_main(folder=folder, config=target if target.exists() else None)
        else:
            first = open_start_window(config=config)
        return _exec(app)       # `first` keeps the window (and the one the welcome opens) alive until then
    w, m, _nodes, stop = open_demo(Path(tempfile.mkdtemp(prefix="archivist-demo-")))
    try:
        return _exec(app)
    finally:
        stop()


def _exec(app) -> int:
    _RUNNING.append(True)
    try:
        return app.exec()
    finally:
        _RUNNING.clear()


def open_demo(root: Path, settings: tuple = ()):
    """The demo: an owner window and a member window on screen, then both nodes started on a worker thread.
    Returns (owner window, member window, DemoNodes, stop); `stop` (idempotent) also runs on File > Quit, which
    therefore ends the demo: both windows close, both nodes stop and `root` is removed."""
    import shutil
    from PySide6.QtCore import QSettings
    from gui.main_window import MainWindow
    from gui.views.settings import load
    s_owner, s_member = settings or (QSettings("Archivist", "ArchivistDemoOwner"),
                                     QSettings("Archivist", "ArchivistDemoMember"))
    tray = app_tray()
    w = MainWindow(settings=s_owner)
    w.setWindowTitle("Archivist — owner (demo)")
    tray.watch(w)
    w.show()
    print(f"archivist: window visible after {time.perf_counter() - T0:.2f} s", file=sys.stderr)
    if load(w.settings)["spark_warmup"] and os.environ.get("ARCHIVIST_NO_SPARK") != "1":
        warm_spark(w, load(w.settings)["spark_master"] or None)
    m = MainWindow(settings=s_member)
    m.setWindowTitle("Archivist — member (demo)")
    tray.watch(m)
    m.show()
    m.move(w.x() + 60, w.y() + 60)
    nodes = start_demo(w, m, root)
    done: list[bool] = []

    def stop() -> None:
        if done:
            return
        done.append(True)
        for x in (m, w):               # their queued work first (the demo nodes' start), then the nodes
            x.quitting = True
            x.close()
        nodes.stop()
        shutil.rmtree(root, ignore_errors=True)
    on_quit(stop)
    return w, m, nodes, stop
