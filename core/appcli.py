"""`archivist gui` and `archivist demo`: the desktop app (imported lazily so the CLI never needs Qt)."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse


def open_target(target: str | None) -> Path | str | None:
    """What a file manager or browser hands `archivist gui` (the desktop entries run `archivist gui %u` and
    `%f`): a path, a file:// URL (made a path) or a magnet link (kept as text: a Path would fold its '//')."""
    if not target:
        return None
    if target.startswith("file://"):
        return Path(unquote(urlparse(target).path))
    from core.archive.torrent import is_magnet_link
    if is_magnet_link(target):
        return target.strip()
    return Path(target)


def cmd_gui(a) -> int:
    from gui.app import run_gui
    return run_gui(demo=False, config=a.config, folder=open_target(a.target))


def cmd_demo(a) -> int:
    from gui.app import run_demo
    return run_demo(headless=a.headless)


def register(sub) -> None:
    p = sub.add_parser("gui")
    p.add_argument("--config", metavar="FILE", default=None,
                   help="the node's TOML config (default: $ARCHIVIST_CONFIG, else archivist.toml in the data "
                        "directory); when it does not exist the window starts with the first-run screen, which "
                        "writes it")
    p.add_argument("target", nargs="?", default=None, metavar="PATH_OR_MAGNET",
                   help="an archive folder, index, data file, .torrent, file:// URL or magnet link to open in the "
                        "Inspector (what the desktop's file and link handlers pass)")
    p.set_defaults(func=cmd_gui)
    p = sub.add_parser("demo")
    p.add_argument("--headless", action="store_true", help="print the flow instead of opening the window")
    p.set_defaults(func=cmd_demo)
