"""The first run from the window alone: an empty home folder, no config; the welcome screen leads an owner, a member
and support staff in with real widgets and clicks. The nodes are real (libtorrent on 127.0.0.1 port 0 via the
"only this computer" choice, the embedded Waku node on 127.0.0.1 port 0); everything started is closed again."""
from __future__ import annotations

import dataclasses
import os
import re
import stat
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

from core.node.config import load
from core.node.state import Role
from gui.main_window import TAB_INSPECTOR, MainWindow

LEFT = Qt.MouseButton.LeftButton
KEY_A = "zQ3shYSHp7GoiXaauJMnDcjwU2yNjdzpXLosAWapPS4CFxc11"
ID_A = "0x02a3d2fdb9ac335917bf9d46b38d7496c00bbfadbaf832e8aa61d13ac2b4452084"
# status-go's protocol/messenger_share_urls_test.go: communityURLWithData, the "Doodles" community of key KEY_A
DOODLES = ("https://status.app/c/iyKACkQKB0Rvb2RsZXMSJ0NvbG9yaW5nIHRoZSB3b3JsZCB3aXRoIGpveSDigKIg4bSXIOKAohiYohsiBy"
           "MxMzFEMkYqAwEhMwM=#" + KEY_A)
# Threads that outlive their owner's stop() by the libraries' design, not ours: trio's idle worker cache (exits
# after 10 s idle) and py-libp2p's pubsub seen-message cache sweeper (core/waku does not stop it; noted for the lead).
LINGERING = ("Trio thread", "(_background_cleanup)")


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}


def _children() -> list[int]:
    """Processes whose parent is this one (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


@pytest.fixture
def start(qtbot, home):
    """`start()` opens what `archivist gui` opens (gui.app.open_start_window). The QSettings file is passed in
    explicitly under XDG_CONFIG_HOME, because Qt caches its settings path per process at first use. At the end every
    window is closed, and no thread or child process started here is left."""
    from gui.app import make_app, open_start_window
    make_app()
    settings = QSettings(str(home / ".config" / "Archivist" / "Archivist.conf"), QSettings.Format.IniFormat)
    before, children_before, shown = _threads(), set(_children()), []

    def open_():
        w = open_start_window(settings)
        shown.append(w)
        qtbot.waitExposed(w)
        return w
    open_.settings = settings
    yield open_
    for w in shown:
        main = getattr(w, "main_window", None)
        for x in (main, w):
            if x is not None and x.isVisible():
                x.close()
        for x in (main, w):
            if isinstance(x, MainWindow):
                assert x.ops.pool.waitForDone(10_000)

    def leftover():
        return [t.name for t in _threads() - before if t.is_alive() and not any(n in t.name for n in LINGERING)]
    try:
        qtbot.waitUntil(lambda: not leftover(), timeout=10_000)
    except Exception:
        import sys as _sys
        import traceback as _tb
        frames = _sys._current_frames()
        stacks = {t.name: "".join(_tb.format_stack(frames[t.ident])[-6:]) for t in _threads() - before
                  if t.is_alive() and t.ident in frames and t.name in leftover()}
        raise AssertionError(f"threads left running: {stacks}") from None
    assert set(_children()) - children_before == set()     # a session-wide Spark JVM may predate the test


def _type(qtbot, edit, text: str) -> None:
    """Replace a line edit's text the way a person does: select all, type."""
    qtbot.mouseClick(edit, LEFT)
    qtbot.keyClick(edit, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(edit, text)


def _tick(qtbot, button) -> None:
    """Click a check box or radio button on its indicator (its middle may be empty space past the label)."""
    from PySide6.QtCore import QPoint
    qtbot.mouseClick(button, LEFT, pos=QPoint(8, button.height() // 2))
    assert button.isChecked()


def _welcome_choices(w) -> None:
    from gui.views.welcome import WelcomeWindow
    assert isinstance(w, WelcomeWindow) and w.isVisible()
    assert w.current_page() is w.choose
    assert [b.text() for b in (w.create_btn, w.join_btn, w.open_btn)] == [
        "Create a community archive", "Join a community", "Open an archive"]
    assert all(b.isVisible() for b in (w.create_btn, w.join_btn, w.open_btn))


def test_owner_creates_a_community_archive(qtbot, start, home, tmp_path):
    w = start()
    _welcome_choices(w)
    default_config = home / ".local" / "share" / "archivist" / "archivist.toml"
    assert not default_config.exists()
    assert w.owner.place.folder.text() == str(default_config.parent)      # platformdirs under the new home

    qtbot.mouseClick(w.create_btn, LEFT)
    p = w.owner
    assert p.isVisible() and w.current_page() is p
    qtbot.keyClicks(p.name, "Night Owls")
    qtbot.mouseClick(p.primary_btn, LEFT)                   # nothing chosen yet: says what is missing
    assert p.key_error.isVisible() and "key" in p.key_error.text()
    qtbot.mouseClick(p.generate_btn, LEFT)
    cid = re.search(r"Community ID: (0x[0-9a-f]{66})", p.key_info.text()).group(1)
    assert "https://status.app/c#zQ3sh" in p.key_info.text() and not p.key_error.isVisible()
    for name in ("general", "dev"):
        qtbot.keyClicks(p.channel, name)
        qtbot.mouseClick(p.add_btn, LEFT)
    assert [p.channels.item(i).text() for i in range(p.channels.count())] == ["general", "dev"]
    data = tmp_path / "owner-data"
    _type(qtbot, p.place.folder, str(data))
    _tick(qtbot, p.place.loopback)
    qtbot.mouseClick(p.primary_btn, LEFT)

    assert not p.error.isVisible(), p.error.text()
    main = w.main_window
    assert isinstance(main, MainWindow)
    qtbot.waitExposed(main)
    assert not w.isVisible()
    qtbot.waitUntil(lambda: main.communities.model.rowCount() == 1, timeout=30_000)
    c = main.communities.model.rows()[0]
    assert (c.community_id, c.name, c.role) == (cid, "Night Owls", Role.CONTROL)
    m = main.communities.model
    assert [m.data(m.index(0, col)) for col in (0, 1)] == ["Night Owls", "Owner"]
    qtbot.waitUntil(lambda: main.control.isVisible() and "you own this community" in main.control.title.text())

    config = data / "archivist.toml"                        # the file `archivist node --config` reads
    s = load(config)
    assert s.data_dir == data and (s.torrent_listen, s.torrent_local) == ("127.0.0.1:0", True)
    (cc,) = s.communities
    assert (cc.community_id, cc.role, cc.name, len(cc.channel_chat_ids)) == (cid, "control", "Night Owls", 2)
    assert all(ch.startswith(cid) for ch in cc.channel_chat_ids)
    assert "# general" in config.read_text() and "# dev" in config.read_text()
    assert Path(cc.key_file) == data / "keys" / f"{cid}.key"
    assert stat.S_IMODE(os.stat(cc.key_file).st_mode) == 0o600
    assert start.settings.value("engine/data_dir") == str(data)
    assert not default_config.exists()

    main.close()                                            # the next start goes straight to the node
    w2 = start()
    assert isinstance(w2, MainWindow)
    qtbot.waitUntil(lambda: w2.communities.model.rowCount() == 1, timeout=30_000)
    assert w2.communities.model.rows()[0].community_id == cid


def test_member_joins_from_a_share_link(qtbot, start, tmp_path):
    w = start()
    _welcome_choices(w)
    qtbot.mouseClick(w.join_btn, LEFT)
    p = w.member
    assert p.isVisible()
    qtbot.keyClicks(p.link_edit, DOODLES)
    assert not p.link_error.isVisible()
    assert ID_A in p.link_info.text() and KEY_A in p.link_info.text()
    if p.link.data_decoded:                                  # the brotli package decodes the data part
        assert "Doodles" in p.link_info.text() and p.name.text() == "Doodles"
    else:
        _type(qtbot, p.name, "Doodles")
    _tick(qtbot, p.latest_btn)
    data = tmp_path / "member-data"
    _type(qtbot, p.place.folder, str(data))
    _tick(qtbot, p.place.loopback)
    qtbot.mouseClick(p.primary_btn, LEFT)

    assert not p.error.isVisible(), p.error.text()
    main = w.main_window
    qtbot.waitExposed(main)
    try:
        qtbot.waitUntil(lambda: main.communities.model.rowCount() == 1, timeout=30_000)
    finally:
        print("log:", [r[2:] for r in main.log.model.rows()])
    c = main.communities.model.rows()[0]
    assert (c.community_id, c.name, c.role) == (ID_A, "Doodles", Role.MEMBER)
    assert main.communities.model.data(main.communities.model.index(0, 1)) == "Member"
    qtbot.waitUntil(lambda: main.member.isVisible() and main.member.title.text() == "Doodles · member")
    (cc,) = load(data / "archivist.toml").communities
    assert (cc.community_id, cc.role, cc.policy, cc.key_file) == (ID_A, "member", "latest", None)
    assert load(data / "archivist.toml").spark_master == "local[*]"     # Settings' default, written as the node's


@pytest.mark.parametrize("text, says", [
    ("https://status.app/u#zQ3shwQPhRuDJSjVGVBnTjCdgXy5i9WQaeVPdGJD6yTarJQSj", "person's profile"),
    ("https://status.app/c/iyKACkQKB0Rvb2RsZXMS", "no community key after '#'"),
    ("https://status.app/c#" + KEY_A[:-1] + "2", "not a Status public key"),
    ("not a link", "Not a community link or key"),
])
def test_bad_link_says_why_and_writes_nothing(qtbot, start, home, tmp_path, text, says):
    w = start()
    qtbot.mouseClick(w.join_btn, LEFT)
    p = w.member
    data = tmp_path / "member-data"
    _type(qtbot, p.place.folder, str(data))
    qtbot.keyClicks(p.link_edit, text)
    assert p.link_error.isVisible() and says in p.link_error.text()
    assert "\n" not in p.link_error.text()
    qtbot.mouseClick(p.primary_btn, LEFT)
    assert w.isVisible() and w.main_window is None and w.current_page() is p
    assert p.link_error.isVisible() and says in p.link_error.text()
    assert not data.exists() and not (home / ".local").exists()
    assert start.settings.value("engine/data_dir") is None
    _type(qtbot, p.link_edit, DOODLES)                     # fixed: the error goes away
    assert not p.link_error.isVisible() and ID_A in p.link_info.text()
    qtbot.mouseClick(p.back_btn, LEFT)
    assert w.current_page() is w.choose and not data.exists()


def test_open_an_archive_shows_the_inspector(qtbot, start, home, built_community):
    w = start()
    qtbot.mouseClick(w.open_btn, LEFT)
    main = w.main_window
    assert isinstance(main, MainWindow)
    qtbot.waitExposed(main)
    assert not w.isVisible() and main.tabs.currentIndex() == TAB_INSPECTOR and main.inspector.isVisible()
    assert main.running_node is None and main.adapter is None           # no node at all
    with qtbot.waitSignal(main.inspector.opened, timeout=20_000):
        qtbot.keyClicks(main.inspector.source, str(built_community["folder"]))
        qtbot.keyClick(main.inspector.source, Qt.Key.Key_Return)
    assert main.inspector.archives.rowCount() == len(built_community["result"].new_archive_ids)
    assert not (home / ".local").exists()                   # nothing written


def test_owner_imports_a_key_and_existing_channels(qtbot, start, tmp_path):
    """An existing community: its exported key (bad input first) and a channel link; a config already in the
    chosen folder is never overwritten."""
    from core.status.identity import CommunityIdentity
    from core.status.share_link import community_share_link
    ident = CommunityIdentity.generate()
    w = start()
    qtbot.mouseClick(w.create_btn, LEFT)
    p = w.owner
    qtbot.keyClicks(p.key_text, "0x1234")
    qtbot.mouseClick(p.import_btn, LEFT)
    assert p.key_error.isVisible() and p.key_error.text().startswith("Not a usable key") and p.identity is None
    qtbot.keyClicks(p.key_text, ident.export_hex())
    qtbot.keyClick(p.key_text, Qt.Key.Key_Return)
    assert not p.key_error.isVisible() and ident.community_id in p.key_info.text()
    assert community_share_link(ident.community_id) in p.key_info.text()
    uuid = "003cdcd5-e065-48f9-b166-b1a94ac75a11"
    qtbot.keyClicks(p.channel, f"https://status.app/cc/{uuid}#{KEY_A}")      # another community's channel
    data = tmp_path / "owner-data"
    data.mkdir()
    (data / "archivist.toml").write_text("# someone else's\n")
    _type(qtbot, p.place.folder, str(data))
    qtbot.mouseClick(p.primary_btn, LEFT)
    assert p.channel_error.isVisible() and "another community" in p.channel_error.text()
    p.channels.setCurrentRow(0)
    qtbot.mouseClick(p.remove_btn, LEFT)
    qtbot.keyClicks(p.channel, uuid)                         # the same channel of this community, by its UUID
    qtbot.mouseClick(p.primary_btn, LEFT)                    # added on Create: it was typed
    assert [p.channels.item(i).text() for i in range(p.channels.count())] == [uuid]
    assert p.error.isVisible() and "never overwrites" in p.error.text() and w.main_window is None
    assert (data / "archivist.toml").read_text() == "# someone else's\n"


def test_owner_key_file_is_checked_before_it_is_read(qtbot, start, tmp_path, monkeypatch):
    """A key file picked in the owner page is refused by its size before it is read (gui.views.keys.MAX_KEY_FILE,
    the bound of every key file), and a real export is taken."""
    from PySide6.QtWidgets import QFileDialog

    from core.status.identity import CommunityIdentity
    from gui.views.keys import MAX_KEY_FILE
    ident = CommunityIdentity.generate()
    big, good = tmp_path / "big.key", tmp_path / "good.key"
    with open(big, "wb") as f:
        f.truncate(MAX_KEY_FILE + 1)
    good.write_text(ident.export_hex() + "\n")
    w = start()
    qtbot.mouseClick(w.create_btn, LEFT)
    p = w.owner
    for path in (big, good):
        monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, _p=path: (str(_p), "")))
        p._import_file()
        if path is big:
            assert p.key_error.isVisible() and p.key_error.text() == "big.key is too large to be a key file."
    assert ident.community_id in p.key_info.text()


def test_owner_creates_a_community_and_sees_its_first_archive(qtbot, start, tmp_path, monkeypatch):
    """The owner's whole first run: welcome screen, a new key and a channel, the node starts; members' chat of the
    last hours reaches the owner's own Waku node over relay (signed and encrypted as Status sends it); the owner
    presses Archive now and sees the archive: the build line, the timeline, the magnet link to share.

    The node builds with the single-process build (`[spark] build = false`), not the default Spark build: that
    would start a JVM here (tens of seconds) or, under xdist, run on the pipeline tests' session-wide SparkSession
    (which the window would leave running: gui/spark_share.py). The window's Spark build is
    tests/gui/test_spark_failure_reason.py's, in a process of its own."""
    import time as _time
    from core.node import config
    from core.status.identity import CommunityIdentity
    from core.status.traffic import Channel, TrafficGenerator
    made = config.first_run_settings
    monkeypatch.setattr(config, "first_run_settings",
                        lambda **kw: dataclasses.replace(made(**kw), spark_build=False))
    w = start()
    qtbot.mouseClick(w.create_btn, LEFT)
    p = w.owner
    qtbot.keyClicks(p.name, "Night Owls")
    qtbot.mouseClick(p.generate_btn, LEFT)
    qtbot.keyClicks(p.channel, "general")
    qtbot.mouseClick(p.add_btn, LEFT)
    data = tmp_path / "owner-data"
    _type(qtbot, p.place.folder, str(data))
    _tick(qtbot, p.place.loopback)
    qtbot.mouseClick(p.primary_btn, LEFT)
    main = w.main_window
    qtbot.waitExposed(main)
    qtbot.waitUntil(lambda: main.running_node is not None and main.communities.model.rowCount() == 1,
                    timeout=60_000)
    qtbot.waitUntil(lambda: main.control.isVisible() and main.control.archive_btn.isEnabled(), timeout=30_000)
    assert main.control.magnet.text() == "(none yet: no archive built)" and not main.control.copy_btn.isEnabled()

    assert load(data / "archivist.toml").spark_build is False
    (cc,) = load(data / "archivist.toml").communities
    gen = TrafficGenerator(seed=5, authors=4, community=CommunityIdentity.load(cc.key_file))
    gen.channels = [Channel("general", cc.channel_chat_ids[0])]
    now = int(_time.time())
    sent = list(gen.messages(40, start=now - 6 * 3600, span=3 * 3600))    # older than the 1 h grace period
    transport = main.running_node.engine.transport
    for m in sent:
        transport.publish(m.content_topic, m.envelope, m.timestamp_ns)
    stored = main.running_node.engine.paths.root / "messages.sqlite"

    def count() -> int:
        import sqlite3
        con = sqlite3.connect(stored)
        try:
            return con.execute("SELECT COUNT(*) FROM waku_messages").fetchone()[0]
        finally:
            con.close()
    qtbot.waitUntil(lambda: count() == len(sent), timeout=30_000)

    qtbot.mouseClick(main.control.archive_btn, LEFT)
    qtbot.waitUntil(lambda: main.control.build_status.text().startswith("Built"), timeout=120_000)
    assert main.control.build_status.text() == "Built 1 new archive"
    qtbot.waitUntil(lambda: main.control.magnet.text().startswith("magnet:?xt=urn:btih:"), timeout=10_000)
    assert main.control.copy_btn.isEnabled() and len(main.control.chart.shown) == 1
    (c,) = main.communities.model.rows()
    assert len(c.archives) == 1 and c.magnet == main.control.magnet.text()
