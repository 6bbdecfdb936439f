"""`make screenshots`: one PNG of each main view under a real X server (Xvfb), saved to docs/screenshots/.

The parent starts `Xvfb -displayfd` on a free display, runs this script again as a child on that display
(Qt's xcb platform), and stops Xvfb at the end. The child drives real engines (gui.demo.DemoNodes with a fixed
clock, so dates are stable) and grabs each view after Qt has repainted.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
WEEK = 7 * 24 * 3600
SIZE = (1280, 800)
SHOWN_DATA_DIR = Path("/home/alice/.local/share/archivist")   # what the node settings screenshot shows
# a community share link from status-go's messenger_share_urls_test.go (the "Doodles" vector)
SHARE_LINK = ("https://status.app/c/iyKACkQKB0Rvb2RsZXMSJ0NvbG9yaW5nIHRoZSB3b3JsZCB3aXRoIGpveSDigKIg4bSXI"
              "OKAohiYohsiByMxMzFEMkYqAwEhMwM=#zQ3shYSHp7GoiXaauJMnDcjwU2yNjdzpXLosAWapPS4CFxc11")


def start_xvfb() -> tuple[subprocess.Popen, str]:
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1400x900x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        display = f.readline().strip()     # Xvfb writes the display number once it accepts clients
    if not display:
        proc.kill()
        raise SystemExit("Xvfb did not start (is the xvfb package installed? run `make system`)")
    return proc, f":{display}"


def parent() -> int:
    xvfb, display = start_xvfb()
    try:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "ARCHIVIST_SCREENSHOT_CHILD": "1"}
        return subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env, cwd=str(ROOT)).returncode
    finally:
        xvfb.terminate()
        xvfb.wait(10)


# ---------------------------------------------------------------------------------------------------------------
def child() -> int:
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from core.node.clock import FakeClock
    from gui.app import make_app
    from gui.demo import DemoNodes
    from gui.main_window import MainWindow
    from gui.views.settings import SettingsDialog

    app = make_app()
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="archivist-shots-"))
    shots: list[str] = []

    def spin(ms: int = 50) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    def wait(cond, timeout: float = 90.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise SystemExit(f"screenshots: timed out waiting for {what}")
            spin(50)

    def grab(widget, name: str) -> None:
        for _ in range(5):            # let Qt lay out and repaint before grabbing
            widget.repaint()
            spin(60)
        path = OUT / f"{name}.png"
        if not widget.grab().save(str(path)):
            raise SystemExit(f"could not save {path}")
        shots.append(path.name)
        print(f"screenshots: {path.relative_to(ROOT)}")

    def window(name: str, title: str) -> MainWindow:
        w = MainWindow(settings=QSettings(str(tmp / f"{name}.ini"), QSettings.Format.IniFormat))
        w.setWindowTitle(title)
        w.resize(*SIZE)
        w.show()
        return w

    nodes = DemoNodes(tmp / "demo", weeks=12, messages=3000, settle=0.0, tick_seconds=0.2,
                      clock=FakeClock(1_760_000_000)).start()
    try:
        owner = window("owner", "Archivist — owner")
        nodes.add_owner()
        cid = nodes.control_cfg.community_id
        owner.attach_engine(nodes.control)
        owner.archive_now(cid)
        wait(lambda: owner.control.build_status.text().startswith("Built"), what="the owner's build")
        wait(lambda: len(owner.control.chart.shown) >= 10, what="the timeline")
        grab(owner, "owner")

        member = window("member", "Archivist — member")
        nodes.add_member()
        nodes.run_engines()
        member.attach_engine(nodes.member, history=nodes.history_of)
        wait(lambda: member.adapter.snapshot and any(a.imported for a in member.adapter.snapshot[0].archives),
             what="the member's first import")
        lo = nodes.history_start + 3 * WEEK
        member.member.set_range(lo, lo + 3 * WEEK)
        member.member.apply_btn.click()
        wait(lambda: sum(a.imported for a in member.adapter.snapshot[0].archives) >= 4, what="the range import")
        member.refresh()
        spin(500)
        grab(member, "member")

        member.tabs.setCurrentIndex(1)
        member.history.reload()
        wait(lambda: member.history.model.rowCount() > 0, what="history")
        grab(member, "history")

        broken = tmp / "broken"
        shutil.copytree(nodes.control.paths.archive_dir / cid, broken / "archivedata" / cid)
        shutil.copytree(nodes.control.paths.torrent_dir, broken / "torrents")
        _corrupt(broken / "archivedata" / cid)
        got: list = []
        owner.inspector.opened.connect(got.append)
        owner.open_path(broken / "archivedata" / cid)
        wait(lambda: got, what="the inspector")
        owner.inspector.archive_view.selectRow(2)
        grab(owner, "inspector")
        owner.inspector.tabs.setCurrentIndex(1)
        owner.inspector.archive_view.selectRow(0)
        wait(lambda: owner.inspector.messages.rowCount() > 0, what="decoded messages")
        grab(owner, "inspector-messages")

        owner.tabs.setCurrentIndex(3)
        grab(owner, "log")
        dlg = SettingsDialog(owner.settings, owner)
        dlg.show()
        grab(dlg, "settings")
        dlg.close()
        from core.node.config import first_run_settings, save   # with the node's config: its own settings too
        node_cfg = save(first_run_settings(role="control", community_id=cid, data_dir=SHOWN_DATA_DIR,
                                           name="Sample community", loopback=True,
                                           channels=list(nodes.control_cfg.channel_chat_ids),
                                           key_file=nodes.control_cfg.key_file), tmp / "node" / "archivist.toml")
        dlg = SettingsDialog(owner.settings, owner, config=node_cfg)
        dlg.resize(760, 1000)
        dlg.show()
        grab(dlg, "settings-node")
        dlg.close()

        from gui.views.welcome import WelcomeWindow       # what a first run shows (no config yet)
        welcome = WelcomeWindow(QSettings(str(tmp / "welcome.ini"), QSettings.Format.IniFormat))
        welcome.show()
        grab(welcome, "welcome")
        welcome.join_btn.click()
        welcome.member.link_edit.setText(SHARE_LINK)
        wait(lambda: welcome.member.link is not None, what="the decoded share link")
        grab(welcome, "welcome-join")
        welcome.close()
        member.close()
        owner.close()
    finally:
        nodes.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"screenshots: {len(shots)} images in {OUT.relative_to(ROOT)}")
    return 0


def _corrupt(folder: Path) -> None:
    """Non-zero padding in the third archive and a flipped message byte in the fifth: what support staff see."""
    from core.archive import codec
    entries = codec.sorted_entries(codec.decode_index((folder / "index").read_bytes()))
    with open(folder / "data", "r+b") as f:
        _, e = entries[2]
        f.seek(e.offset + e.size - 1)
        f.write(b"\x01")
        _, e = entries[4]
        f.seek(e.offset + e.raw_size // 2)
        b = f.read(1)
        f.seek(e.offset + e.raw_size // 2)
        f.write(bytes([b[0] ^ 0xFF]))


if __name__ == "__main__":
    sys.exit(child() if os.environ.get("ARCHIVIST_SCREENSHOT_CHILD") else parent())
