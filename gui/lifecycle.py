"""The application's life: its one tray icon, quit hooks and File > Quit / Ctrl+Q for every window.

A module of its own so that gui.main_window (Quit) and gui.app (start-up) share it without importing each other.
"""
from __future__ import annotations

from typing import Callable

_TRAY = None                                    # the application's gui.tray.Tray, made on first use
_QUIT_HOOKS: list[Callable[[], None]] = []      # run once by quit_application (the demo's nodes)
_RUNNING: list[bool] = []                        # non-empty while run_gui's event loop runs


def app_tray():
    """The one tray icon of this QApplication. With a system tray, closing a window keeps the app (and its
    node) running; without one, closing works as before."""
    global _TRAY
    from PySide6.QtWidgets import QApplication
    from gui.tray import Tray
    app = QApplication.instance()
    if _TRAY is None or _TRAY.parent() is not app:
        _TRAY = Tray(app, on_quit=quit_application)
        if _TRAY.available:
            app.setQuitOnLastWindowClosed(False)
    return _TRAY


def on_quit(fn: Callable[[], None]) -> None:
    """Run `fn` when the user quits (before the event loop ends)."""
    _QUIT_HOOKS.append(fn)


def quit_application() -> None:
    """File > Quit and Ctrl+Q: close every window (each stops its node, even with a tray icon), run the quit
    hooks, end the event loop."""
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance()
    for w in list(app.topLevelWidgets()):
        if hasattr(w, "quitting"):        # a MainWindow (not imported: gui.main_window imports this module)
            w.quitting = True
            w.close()
        elif w.isVisible():
            w.close()
    while _QUIT_HOOKS:
        _QUIT_HOOKS.pop(0)()
    if _TRAY is not None:
        _TRAY.close()
    if _RUNNING:        # only a running loop is ended: quit() outside exec() leaves Qt half-closed (tests)
        app.quit()
