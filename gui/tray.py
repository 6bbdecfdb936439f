"""The tray icon: says that seeding goes on while the window is closed, and notifies when a new archive arrives
or a download ends. Where the platform has no system tray (offscreen, some desktops) the same notices are still
recorded and signalled, closing the window then quits as before, and nothing pretends to be in a tray."""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from core.node import events as E
from core.node.state import Role, SeedingState
from gui.models import short_id
from gui.resources import icon

SEEDING = (SeedingState.STARTING, SeedingState.SEEDING_WITH_PEERS, SeedingState.SEEDING_IDLE)


class Tray(QObject):
    """One per application. `watch(window)` follows a MainWindow's engine (its adapter's events and snapshots)."""

    notified = Signal(str, str)        # title, text: every desktop notification, shown or not

    def __init__(self, parent: QObject | None = None, *, available: bool | None = None,
                 on_quit: Callable[[], None] | None = None):
        super().__init__(parent)
        self.available = QSystemTrayIcon.isSystemTrayAvailable() if available is None else available
        self.shown: list[tuple[str, str]] = []        # every notification, in order
        self.windows: list = []
        self.hidden: list = []                        # windows closed to the tray (their nodes keep running)
        self._states: dict[int, list] = {}            # id(window) -> its latest community snapshots
        self.icon: QSystemTrayIcon | None = None
        self.on_quit = on_quit
        if self.available:
            self.icon = QSystemTrayIcon(icon("archivist"), self)
            self.menu = QMenu()
            self.menu.addAction("Show Archivist", self.show_windows)
            self.menu.addSeparator()
            self.menu.addAction("Quit", self._quit)
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(lambda reason: reason == QSystemTrayIcon.ActivationReason.Trigger
                                        and self.show_windows())
            self.icon.show()
        self.update_tooltip()

    # -- what it follows ---------------------------------------------------------------------------------------
    def watch(self, window) -> None:
        """Follow `window`'s engine now (if attached) and whenever one is attached later."""
        if window not in self.windows:
            self.windows.append(window)
            # forget a window Qt deletes (the lambda holds its id, not the window: no Python reference outlives it)
            window.destroyed.connect(lambda _obj=None, i=id(window): self._forget(i))
        window.tray = self
        if window.adapter is not None:
            self.attach(window, window.adapter)

    def attach(self, window, adapter) -> None:
        adapter.event.connect(lambda e, w=window: self.on_event(w, e))
        adapter.communities_changed.connect(lambda states, w=window: self.on_states(w, states))

    def on_states(self, window, states) -> None:
        self._states[id(window)] = list(states)
        self.update_tooltip()

    def on_event(self, window, e) -> None:
        name = self._name(window, e.community_id)
        if e.name == E.HISTORY_ARCHIVES_CREATED:
            n = len(e.data.get("archives") or ())
            self.notify("New archive", f"{name}: {n} new archive{'s' if n != 1 else ''} built and now seeding.")
        elif e.name == E.MAGNETLINK_RECEIVED:
            self.notify("New archive", f"{name}: the community published new history archives.")
        elif e.name == E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED:
            self.notify("Download finished", f"{name}: the chosen history archives are downloaded and imported.")

    @staticmethod
    def _name(window, cid: str | None) -> str:
        c = window.adapter.community(cid) if cid and window.adapter is not None else None
        if c is not None and c.name:
            return c.name
        return short_id(cid) if cid else "Archivist"      # as the lists write it, so that one can be matched

    # -- what it shows -----------------------------------------------------------------------------------------
    def seeding_count(self) -> int:
        return sum(1 for states in self._states.values() for c in states
                   if c.role == Role.CONTROL and c.seeding in SEEDING)

    def tooltip(self) -> str:
        n = self.seeding_count()
        hidden = any(not w.isVisible() for w in self.hidden)
        if n:
            text = f"Archivist: seeding {n} communit{'ies' if n != 1 else 'y'}"
            return text + (" (the window is closed; seeding continues)" if hidden else "")
        return "Archivist: not seeding"

    def update_tooltip(self) -> None:
        if self.icon is not None:
            self.icon.setToolTip(self.tooltip())

    def notify(self, title: str, text: str) -> None:
        """A desktop notification (the tray's balloon where there is a tray); always recorded and signalled."""
        self.shown.append((title, text))
        if self.icon is not None and QSystemTrayIcon.supportsMessages():
            self.icon.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, 8000)
        self.notified.emit(title, text)

    def keeps_running(self, window) -> bool:
        """Closing `window` hides it and keeps its node seeding only when there is a tray to come back from."""
        return self.available and (window.running_node is not None or window.adapter is not None)

    def window_hidden(self, window) -> None:
        if window not in self.hidden:
            self.hidden.append(window)
        self.update_tooltip()
        self.notify("Archivist keeps running",
                    "Seeding continues in the background. Quit from the tray icon's menu or with Ctrl+Q.")

    def show_windows(self) -> None:
        for w in self.windows:
            w.show()
            w.raise_()
            w.activateWindow()
        self.hidden.clear()
        self.update_tooltip()

    def _quit(self) -> None:
        if self.on_quit is not None:
            self.on_quit()

    def _forget(self, window_id: int) -> None:
        self.windows = [w for w in self.windows if id(w) != window_id]
        self.hidden = [w for w in self.hidden if id(w) != window_id]
        self._states.pop(window_id, None)
        self.update_tooltip()

    def close(self) -> None:
        """Hide the icon and let go of every window (the tray outlives them: it belongs to the application)."""
        self.windows, self.hidden, self._states = [], [], {}
        if self.icon is not None:
            self.icon.hide()
