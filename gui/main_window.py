"""The main window: communities on the left; on the right the selected community (owner or member view), its
history, the Inspector and the log. Engine commands go through the adapter; nothing here blocks."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QIcon, QKeySequence
from PySide6.QtWidgets import (QLabel, QMainWindow, QMessageBox, QScrollArea, QSplitter, QStackedWidget, QTabWidget, QToolBar,
                               QWidget)

from core.node import events as E
from core.node.state import CommunityState, Role
from gui.adapter import EngineAdapter
from gui.operations import Operations
from gui.resources import icon
from gui.views.communities import CommunitiesView
from gui.views.control import ControlView
from gui.views.history import HistoryView
from gui.views.inspector import InspectorView
from gui.views.log import LogView
from gui.views.member import MemberView, warm_imports
from gui.views.settings import SettingsDialog

TAB_COMMUNITY, TAB_HISTORY, TAB_INSPECTOR, TAB_LOG = range(4)
STOP_SECONDS = 2.0      # Quit waits at most this long for the node to stop


def scrolled(w: QWidget) -> QScrollArea:
    """Long views scroll instead of forcing a tall minimum window height."""
    area = QScrollArea()
    area.setWidget(w)
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    return area


class MainWindow(QMainWindow):
    spark_ready = Signal(float)     # seconds the background Spark warm-up took
    def __init__(self, engine: Any = None, settings: QSettings | None = None, ops: Operations | None = None):
        super().__init__()
        self.setWindowTitle("Archivist")
        self.setWindowIcon(icon("archivist"))
        self.setObjectName("mainWindow")
        self.settings = settings or QSettings("Archivist", "Archivist")
        self.ops = ops or Operations(self)
        self.adapter: EngineAdapter | None = None
        self.history_source = None
        self._counts: dict[str, int] = {}         # archive id -> messages, decoded once on a worker thread
        self._count_tried: set[str] = set()
        self.current_id: str | None = None

        self.communities = CommunitiesView()
        self.control = ControlView()
        self.member = MemberView()
        self.placeholder = QLabel("Select a community on the left.\n\nNo engine is running yet: the Inspector "
                                  "(Ctrl+3) opens any archive folder, index, data file or torrent.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack = QStackedWidget()
        for w in (self.placeholder, self.control, self.member):
            self.stack.addWidget(scrolled(w))
        self.history = HistoryView()
        self.inspector = InspectorView(self.ops)
        self.log = LogView()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.stack, icon("community"), "Community")
        self.tabs.addTab(self.history, icon("history"), "History")
        self.tabs.addTab(self.inspector, icon("inspector"), "Inspector")
        self.tabs.addTab(self.log, icon("log"), "Log")
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.communities)
        self.split.addWidget(self.tabs)
        self.split.setStretchFactor(1, 1)
        self.split.setChildrenCollapsible(False)
        self.split.setSizes([360, 840])
        self.setCentralWidget(self.split)
        self.op_label = QLabel("")
        self.statusBar().addPermanentWidget(self.op_label)
        from gui.views.spark_status import SparkStatus
        self.spark_status = SparkStatus()        # the Spark warm-up: its stage, progress and reason (gui.app)
        self.statusBar().addWidget(self.spark_status, 1)
        self._make_actions()
        self._wire()
        self.restore_state()
        self.apply_settings()
        self._scratch = None
        self.spark_owner = None          # the SparkOwner this window holds (gui/spark_share.py), once it needs Spark
        self.running_node = None         # core.node.runner.RunningNode once start_node_in_background() started it
        self.node_config: Path | None = None   # the TOML that node was started from (Settings edits it)
        self.tray = None                 # gui.tray.Tray watching this window (set by Tray.watch)
        self.quitting = False            # set by Quit: closing then stops everything even with a tray
        self._shut = False
        self.node_stopper = None         # the thread stopping the node (joined for at most STOP_SECONDS)
        if engine is not None:
            self.attach_engine(engine)

    # -- structure -----------------------------------------------------------------------------------------
    def _make_actions(self) -> None:
        def act(text: str, keys, slot, icon_name: str | None = None, tip: str = "") -> QAction:
            a = QAction(icon(icon_name) if icon_name else QIcon(), text, self)
            a.setShortcuts(keys if isinstance(keys, list) else [QKeySequence(keys)])
            a.setToolTip(f"{tip or text} ({QKeySequence(a.shortcut()).toString()})")
            a.triggered.connect(slot)
            self.addAction(a)
            return a
        self.act_open = act("Open in Inspector…", QKeySequence.StandardKey.Open, self._open_inspector, "open")
        self.act_archive = act("Archive now", "Ctrl+Shift+A", self._archive_now_current, "archive-now",
                               "Build archives now for the selected community")
        self.act_refresh = act("Refresh", QKeySequence.StandardKey.Refresh, self.refresh, "refresh")
        self.act_settings = act("Settings…", "Ctrl+,", self.open_settings, "settings")
        self.act_find = act("Find", QKeySequence.StandardKey.Find, self._focus_search)
        self.act_quit = act("Quit", "Ctrl+Q", self.quit_app)   # not StandardKey.Quit: empty on some platforms
        self.tab_actions = [act(name, f"Ctrl+{i + 1}", lambda _=False, i=i: self.tabs.setCurrentIndex(i))
                            for i, name in enumerate(("Community", "History", "Inspector", "Log"))]
        tb = QToolBar("Main")
        tb.setObjectName("mainToolbar")
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for a in (self.act_open, self.act_archive, self.act_refresh, self.act_settings):
            tb.addAction(a)
        self.addToolBar(tb)
        m = self.menuBar()
        f = m.addMenu("&File")
        for a in (self.act_open, self.act_settings, self.act_quit):
            f.addAction(a)
        c = m.addMenu("&Community")
        for a in (self.act_archive, self.act_refresh):
            c.addAction(a)
        v = m.addMenu("&View")
        for a in self.tab_actions + [self.act_find]:
            v.addAction(a)
        h = m.addMenu("&Help")
        h.addAction("Keyboard shortcuts", self.show_shortcuts)

    def _wire(self) -> None:
        self.communities.selected.connect(self.show_community)
        self.control.support_toggled.connect(self.set_support)
        self.control.archive_now.connect(self.archive_now)
        self.member.policy_chosen.connect(self.set_policy)
        self.member.cancel_requested.connect(lambda cid: self._command("cancel download", "cancel_download", cid))
        self.member.resume_requested.connect(lambda cid: self._command("resume download", "resume_download", cid))
        self.history.load_requested.connect(self.load_history)
        from gui.views.keys import wire as wire_group_keys
        wire_group_keys(self)            # the member view's "add the community's key" -> Engine.add_group_key
        self.ops.started.connect(lambda _i, label: self._ops_changed())
        self.ops.finished.connect(lambda _i, label, ok: self._ops_changed(label, ok))

    # -- engine ------------------------------------------------------------------------------------------------
    def attach_engine(self, engine: Any, history: Any = None) -> None:
        """Show `engine`'s communities. `history(cid, chat, limit, offset) -> [dict]` serves the History view
        when the engine has no history() command of its own."""
        self.history_source = history
        if hasattr(getattr(engine, "clock", None), "now"):
            self.control.clock = engine.clock.now      # the engine's (injectable) time, not the wall clock
            self.member.clock = engine.clock.now
        self.ops.run(lambda ctx: warm_imports(), label="load views")   # before the first snapshot, off this thread
        self.adapter = EngineAdapter(engine, self.ops, self)
        self.history.attach_engine(engine)   # whole-history search and channel names: opened on a worker thread
        self.adapter.event.connect(self.log.add_event)
        self.adapter.event.connect(self._on_event)
        self.adapter.event.connect(self.member.on_event)
        self.adapter.communities_changed.connect(self.update_communities)
        self.adapter.failed.connect(self._failed)
        self.adapter.progress.connect(lambda cid, d: cid == self.current_id and self.member.on_progress(d))
        if self.tray is not None:
            self.tray.attach(self, self.adapter)
        self.log.add("archivist.engineAttached", None, {"engine": type(engine).__name__})
        self.placeholder.setText("Select a community on the left.")
        self.adapter.refresh_now()

    def _on_event(self, e) -> None:
        if e.name == E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED and e.community_id == self.history.community_id:
            self.history.reload()

    def refresh(self) -> None:
        if self.adapter:
            self.adapter.refresh_now()

    def update_communities(self, states: list[CommunityState]) -> None:
        self.communities.update_states(states)
        if self.current_id:
            c = next((s for s in states if s.community_id == self.current_id), None)
            if c is not None:
                self._show_state(c)

    def show_community(self, community_id: str) -> None:
        self.current_id = community_id
        c = self.adapter.community(community_id) if self.adapter else None
        if c is not None:
            self._show_state(c)
            self.history.set_community(c.community_id, c.name)

    def _show_state(self, c: CommunityState) -> None:
        c = self._with_counts(c)
        view = self.control if c.role == Role.CONTROL else self.member
        view.show_state(c)
        self.stack.setCurrentWidget(view.parentWidget().parentWidget())
        self.act_archive.setEnabled(c.role == Role.CONTROL)

    def _with_counts(self, c: CommunityState) -> CommunityState:
        """Fill in message counts the snapshot lacks (timeline, member table) from the archive folder."""
        from dataclasses import replace
        want = {a.archive_id for a in c.archives if a.messages is None and a.archive_id not in self._count_tried
                and (c.role == Role.CONTROL or a.imported)}
        folder = self._archive_folder(c.community_id)
        if want and folder is not None:
            self._count_tried |= want
            from gui.views.inspector import _inspection

            def merge(counts: dict) -> None:
                self._counts.update(counts)
                if self.current_id == c.community_id and self.adapter and self.adapter.community(c.community_id):
                    self._show_state(self.adapter.community(c.community_id))
            self.ops.run(lambda ctx: _inspection().message_counts(folder, want), on_done=merge,
                         key=f"counts-{c.community_id}", label="count messages")
        if not any(a.messages is None and a.archive_id in self._counts for a in c.archives):
            return c
        return replace(c, archives=tuple(replace(a, messages=self._counts[a.archive_id])
                                         if a.messages is None and a.archive_id in self._counts else a
                                         for a in c.archives))

    def _archive_folder(self, community_id: str) -> Path | None:
        eng = self.adapter.engine if self.adapter else None
        if hasattr(eng, "archive_folder"):          # the engine's read API
            return Path(eng.archive_folder(community_id))
        root = getattr(getattr(eng, "paths", None), "archive_dir", None)
        return Path(root) / community_id if root is not None else None

    def _command(self, what: str, method: str, *args, on_done=None, **kwargs) -> None:
        if self.adapter is None:
            self.statusBar().showMessage(f"{what}: no engine running", 5000)
            return
        self.log.add("archivist.command", args[0] if args else None, {"command": method})
        self.adapter.call(what, method, *args, on_done=on_done, **kwargs)

    def set_support(self, community_id: str, on: bool) -> None:
        self._command("archive support", "set_archive_support", community_id, on)

    def archive_now(self, community_id: str) -> None:
        self.control.set_build_status("Building archives…")
        self.control.set_building(True)

        def done(result) -> None:
            ids = getattr(result, "new_archive_ids", None)
            if ids is None and isinstance(result, dict):
                ids = result.get("new_archive_ids")
            n = len(ids or ())
            self.control.set_build_status(f"Built {n} new archive{'s' if n != 1 else ''}" if n
                                          else "Nothing new to archive")
            self.control.set_building(False)
        self._command("archive now", "archive_now", community_id, on_done=done)

    def _archive_now_current(self) -> None:
        if self.current_id and self.control.isVisible():
            self.archive_now(self.current_id)

    def set_policy(self, community_id: str, policy, start, end) -> None:
        self._command("download policy", "set_download_policy", community_id, policy, start=start, end=end)

    def load_history(self, community_id: str, chat, limit: int, offset: int) -> None:
        show = lambda rows: self.history.show_page(community_id, offset, list(rows or []))  # noqa: E731
        if self.adapter is not None and hasattr(self.adapter.engine, "history"):
            self._command("history", "history", community_id, chat=chat, limit=limit, offset=offset, on_done=show)
        elif self.history_source is not None:   # the member's history database, read on a worker thread
            src = self.history_source
            self.ops.run(lambda ctx: src(community_id, chat, limit, offset), on_done=show,
                         on_error=lambda e: self.history.show_error(str(e)), key="history", label="history")
        else:
            self.history.show_error("no engine running")

    def _failed(self, what: str, text: str) -> None:
        self.log.add("archivist.error", None, {"what": what, "error": text})
        self.statusBar().showMessage(f"{what} failed: {text}", 10_000)
        if what == "archive support":
            self.control.support.setEnabled(True)
        if what == "archive now":
            self.control.set_build_status("Build failed (see Log)")
            self.control.set_building(False)
        if what == "history":
            self.history.show_error(text)

    # -- misc actions ------------------------------------------------------------------------------------------
    def _ops_changed(self, label: str = "", ok: bool = True) -> None:
        n = len(self.ops._running)
        self.op_label.setText(f"{n} background task{'s' if n != 1 else ''}" if n else "")
        if label and not ok:
            self.log.add("archivist.operationFailed", None, {"operation": label})

    def _open_inspector(self) -> None:
        self.tabs.setCurrentIndex(TAB_INSPECTOR)
        self.inspector.choose_folder()

    def _focus_search(self) -> None:
        w: QWidget = {TAB_HISTORY: self.history.search, TAB_INSPECTOR: self.inspector.search,
                      TAB_LOG: self.log.search}.get(self.tabs.currentIndex(), self.inspector.source)
        w.setFocus()

    def apply_settings(self) -> None:
        from gui.views.settings import load
        self.inspector.codex_api = load(self.settings)["codex_api_url"] or None

    def enable_magnet_fetch(self, settings=None) -> None:
        """Let the Inspector download magnet links (its own BitTorrent session, started on first use)."""
        import tempfile
        from gui.views.inspector import _inspection
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="archivist-inspector-")
        self.inspector.fetcher = _inspection().MagnetFetcher(Path(self._scratch.name), settings)

    def open_settings(self) -> None:
        dlg = SettingsDialog(self.settings, self, config=self.node_config)
        if dlg.exec():
            v = dlg.values()
            self.apply_settings()
            if self.adapter is not None:
                self._command("global archive support", "set_global_archive_support", v["global_archive_support"])

    def show_shortcuts(self) -> None:
        lines = [f"{a.text().rstrip('…')}: {a.shortcut().toString()}" for a in self.actions() if not a.shortcut().isEmpty()]
        QMessageBox.information(self, "Keyboard shortcuts", "\n".join(lines))

    def open_path(self, path: Path | str) -> None:
        self.tabs.setCurrentIndex(TAB_INSPECTOR)
        self.inspector.open(path)

    open_folder = open_path   # the placeholder's name, kept for callers

    # -- remembered state ----------------------------------------------------------------------------------
    def restore_state(self) -> None:
        s = self.settings
        geo = s.value("window/geometry")
        if geo is None or not self.restoreGeometry(geo):
            self.resize(1200, 760)
        self.fit_to_screen()
        st = s.value("window/state")
        if st is not None:
            self.restoreState(st)
        sp = s.value("window/splitter")
        if sp is not None:
            self.split.restoreState(sp)
        self.tabs.setCurrentIndex(int(s.value("window/tab", TAB_COMMUNITY)))

    def fit_to_screen(self) -> None:
        """Never larger than the screen (a default size, or a geometry saved on a bigger screen)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        avail, frame = screen.availableGeometry(), self.frameGeometry().size() - self.size()
        w, h = avail.width() - frame.width(), avail.height() - frame.height()
        if self.width() > w or self.height() > h:
            self.resize(min(self.width(), w), min(self.height(), h))

    def showEvent(self, e) -> None:
        super().showEvent(e)
        self.fit_to_screen()       # again now that the window frame is known

    def save_state(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/splitter", self.split.saveState())
        s.setValue("window/tab", self.tabs.currentIndex())
        s.sync()

    def quit_app(self) -> None:
        """File > Quit, Ctrl+Q: every window closes and every node stops (gui.lifecycle.quit_application)."""
        from gui.lifecycle import quit_application
        quit_application()

    def closeEvent(self, e: QCloseEvent) -> None:
        if self._shut:
            super().closeEvent(e)
            return
        self.save_state()
        if not self.quitting and self.tray is not None and self.tray.keeps_running(self):
            e.ignore()                 # closing the window is not quitting: the node keeps seeding
            self.hide()
            self.tray.window_hidden(self)
            return
        self.shutdown()
        super().closeEvent(e)

    def shutdown(self) -> None:
        """Stop what this window started: the node (within STOP_SECONDS; it saves its resume data, so downloads
        resume at the next start), background work, the Inspector's session, Spark."""
        self._shut = True
        if self.adapter is not None:
            self.adapter.close()
        self.ops.shutdown(5000)        # before the node: a running "start communities" must not race its stop
        self.history.shutdown()
        node, self.running_node = self.running_node, None
        if node is not None:
            import threading
            self.node_stopper = threading.Thread(target=node.stop, name="node-stop")
            self.node_stopper.start()
        if self.inspector.fetcher is not None:
            self.inspector.fetcher.close()
            self.inspector.fetcher = None
        if self.node_stopper is not None:
            self.node_stopper.join(STOP_SECONDS)
        if self.spark_owner is not None:   # shared by the process's windows: the last one closes it (spark_share)
            from gui import spark_share
            spark_share.release(self)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
