"""`archivist gui` and `archivist demo`: the desktop app (imported lazily so the CLI never needs Qt)."""
from __future__ import annotations


def cmd_gui(a) -> int:
    from gui.app import run_gui
    return run_gui(demo=False)


def cmd_demo(a) -> int:
    from gui.app import run_demo
    return run_demo(headless=a.headless)


def register(sub) -> None:
    p = sub.add_parser("gui", help="the desktop window (default)")
    p.set_defaults(func=cmd_gui)
    p = sub.add_parser("demo", help="the window with a sample community on 127.0.0.1 (headless without a display)")
    p.add_argument("--headless", action="store_true", help="print the flow instead of opening the window")
    p.set_defaults(func=cmd_demo)
