"""Application entry points. Placeholder window until the GUI issue: it shows the archives of a folder."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


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


def run_demo(headless: bool = False) -> int:
    with tempfile.TemporaryDirectory(prefix="archivist-demo-") as tmp:
        folder = _demo_folder(Path(tmp))
        if headless or not has_display():
            from core.archive.inspect import inspect_path
            from core.archive.verify import verify_folder
            ins = inspect_path(str(folder))
            for r in ins.rows:
                print(f"  archive {r.archive_id[:18]}..  {r.messages} messages  {r.size} bytes")
            rep = verify_folder(folder)
            print(f"demo: verify {'OK' if rep.ok else 'FAILED'} ({rep.archives} archives, {rep.messages} messages)")
            return 0 if rep.ok else 1
        return run_gui(demo=False, folder=folder)


def run_gui(demo: bool = False, folder: Path | None = None) -> int:
    from PySide6.QtWidgets import QApplication
    from gui.main_window import MainWindow
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Archivist")
    w = MainWindow()
    if folder is not None:
        w.open_folder(folder)
    w.show()
    return app.exec()
