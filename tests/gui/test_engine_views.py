"""The real window driving real engines: toggle archive support, build an archive now, and a member who picks a
time range gets exactly those archives downloaded, imported and shown in History."""
from __future__ import annotations

from PySide6.QtCore import Qt

from core.node.state import ArchiveSupport, Role

WEEK = 7 * 24 * 3600


def wait_state(qtbot, window, cond, timeout=30_000):
    """Wait until the window's latest snapshot satisfies `cond` (snapshots refresh on every engine event)."""
    def ok():
        window.refresh()
        snap = window.adapter.snapshot if window.adapter else []
        assert snap and cond(snap[0])
    qtbot.waitUntil(ok, timeout=timeout)
    return window.adapter.snapshot[0]


def click_indicator(qtbot, box) -> None:
    """A mouse click on the check box's indicator (its left end), where a user clicks: the widget's centre can
    fall on empty space right of the label when the window is wide, and such a click toggles nothing."""
    from PySide6.QtCore import QPoint
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))


def test_toggle_archive_support(qtbot, nodes, window):
    nodes.add_owner(with_history=False)
    cid = nodes.control_cfg.community_id
    window.attach_engine(nodes.control)
    wait_state(qtbot, window, lambda c: c.role == Role.CONTROL)
    qtbot.waitUntil(lambda: window.control.isVisible() and window.control.support.isEnabled())
    assert window.control.support.isChecked()
    assert "ON" in window.control.effective.text()
    click_indicator(qtbot, window.control.support)
    wait_state(qtbot, window, lambda c: c.support == ArchiveSupport.OFF)
    qtbot.waitUntil(lambda: "OFF" in window.control.effective.text() and window.control.support.isEnabled())
    assert nodes.control.state.community_support(cid) is False
    assert not window.control.support.isChecked() and not window.control.archive_btn.isEnabled()
    assert window.communities.model.rows()[0].support == ArchiveSupport.OFF
    click_indicator(qtbot, window.control.support)
    wait_state(qtbot, window, lambda c: c.support == ArchiveSupport.ON)
    assert nodes.control.state.community_support(cid) is True


def test_archive_now_builds_and_shows_timeline(qtbot, nodes, window):
    nodes.add_owner(with_history=False)
    nodes.publish_history()
    window.attach_engine(nodes.control)
    wait_state(qtbot, window, lambda c: c.role == Role.CONTROL)
    qtbot.waitUntil(lambda: window.control.archive_btn.isEnabled())
    assert window.control.chart.shown == [] and not window.control.copy_btn.isEnabled()
    qtbot.mouseClick(window.control.archive_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.control.build_status.text().startswith("Built"), timeout=60_000)
    c = wait_state(qtbot, window, lambda c: len(c.archives) >= 8 and c.magnet)
    qtbot.waitUntil(lambda: len(window.control.chart.shown) == len({(a.start, a.end) for a in c.archives}))
    assert window.control.build_status.text() == f"Built {len(c.archives)} new archives"
    assert window.control.magnet.text() == c.magnet and c.magnet.startswith("magnet:?xt=urn:btih:")
    assert window.control.copy_btn.isEnabled()
    window.control.copy_magnet()
    from PySide6.QtGui import QGuiApplication
    assert QGuiApplication.clipboard().text() == c.magnet
    assert "Next archive due" in window.control.due.text()
    # again, with nothing new: a plain sentence, and the button comes back (it raised AttributeError before)
    qtbot.mouseClick(window.control.archive_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.control.build_status.text() == "Nothing new to archive", timeout=60_000)
    assert window.control.archive_btn.isEnabled()


def test_member_time_range_downloads_right_archives_into_history(qtbot, nodes, window):
    nodes.add_owner()
    cid = nodes.control_cfg.community_id
    nodes.control.archive_now(cid).result(120)
    owner_archives = nodes.control.community_state(cid).archives
    latest = max(owner_archives, key=lambda a: a.end)
    nodes.add_member()                    # policy "latest"; settle 0
    nodes.run_engines()
    window.attach_engine(nodes.member, history=nodes.history_of)
    wait_state(qtbot, window, lambda c: c.role == Role.MEMBER and any(a.imported for a in c.archives), 60_000)
    qtbot.waitUntil(lambda: window.member.isVisible())
    # weeks 2..4 of the history: choose them with the date pickers, as a person would
    lo = nodes.history_start + 2 * WEEK
    hi = nodes.history_start + 4 * WEEK
    window.member.set_range(lo, hi)
    pol, start, end = window.member.policy()
    assert start <= lo and end >= hi
    chosen = [a for a in owner_archives if a.start < end and a.end > start]
    assert 2 <= len(chosen) < len(owner_archives) - 1
    assert window.member.implied.text().startswith(f"{len(chosen)} archives")
    assert window.member.range_btn.text().startswith(f"A time range ({len(chosen)} archives")
    assert window.member.all_btn.text().startswith(f"All history ({len(owner_archives)} archives")
    assert window.member.latest_btn.text().startswith("Only the latest week (1 archive,")
    qtbot.mouseClick(window.member.apply_btn, Qt.MouseButton.LeftButton)
    want_ids = {a.archive_id for a in chosen} | {latest.archive_id}
    c = wait_state(qtbot, window, lambda c: {a.archive_id for a in c.archives if a.imported} == want_ids, 90_000)
    shown_imported = {a.archive_id for a in window.member.model.rows() if a.imported}
    assert shown_imported == want_ids
    # per-archive progress came through the engine's events (downloaded -> importing) before the snapshot said so
    assert {a.archive_id for a in chosen} - {latest.archive_id} <= set(window.member.live)
    # the bar then follows the authors pass (archivist.progress "authors"), which ends full as well
    qtbot.waitUntil(lambda: window.member.progress.value() == window.member.progress.maximum(), timeout=60_000)
    # History shows exactly the messages of those archives' windows
    windows = [(a.start, a.end) for a in owner_archives if a.archive_id in want_ids]
    expected = {"0x" + m.hash.hex() for m in nodes.gen.messages(nodes.messages, start=nodes.history_start,
                                                                 span=nodes.weeks * WEEK)
                if any(s <= m.timestamp_ns // 10**9 < e for s, e in windows)}
    window.tabs.setCurrentIndex(1)
    with qtbot.waitSignal(window.history.loaded, timeout=30_000):
        window.history.reload()
    while window.history.more_btn.isEnabled():
        with qtbot.waitSignal(window.history.loaded, timeout=30_000):
            window.history.load_more()
    got = {r[1]["id"] for r in window.history.model.rows()}
    assert got == expected
    # Cancel: the engine's reason is on screen at once
    qtbot.mouseClick(window.member.cancel_btn, Qt.MouseButton.LeftButton)
    wait_state(qtbot, window, lambda c: "cancelled" in (c.waiting_reason or ""))
    window.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: "cancelled" in window.member.banner.text() and window.member.banner.isVisible())
