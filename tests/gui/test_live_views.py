"""Views stay live and agree with each other: no view shows data older than 2 s after a change made on the engine
side (seeding stats, policy, chosen column, imports), with no Refresh and no window.refresh() in these tests.
What is asserted is what is on screen (widget texts, model rows), compared with the engine's own snapshot."""
from __future__ import annotations

import threading
import time

from PySide6.QtCore import QDate, Qt

from core.node.state import ArchiveInfo, ArchiveSupport, CommunityState, DownloadPolicy, Role, SeedingState
from gui.models import fmt_bytes
from gui.views.member import to_qdate

FRESH_MS = 2000       # the bound: a view may lag the engine by at most this much
CHOSEN, STATE = 5, 6  # member table columns


def settle(cond, *sources, timeout=90.0):
    """Wait (without the GUI's help) until the engine itself says `cond`; Qt events are not processed here.
    `cond` is checked again each time one of `sources` (an engine's EventBus, a TorrentService: anything with
    `subscribe(callback) -> unsubscribe`) publishes; those publish after the state they report has changed."""
    published = threading.Event()
    unsubscribes = [s.subscribe(lambda _e: published.set()) for s in sources]
    try:
        deadline = time.monotonic() + timeout
        while True:
            published.clear()             # cleared before the check: a change after it wakes the wait below
            if cond():
                return
            left = deadline - time.monotonic()
            if left <= 0 or not published.wait(left):
                raise AssertionError("the engine did not get there")
    finally:
        for u in unsubscribes:
            u()


def engine_queue_drained(engine, cid: str) -> None:
    """Every command queued so far for `cid` has run: its queue runs jobs one at a time, in order, so a no-op
    queued now finishes after them."""
    engine.submit(cid, lambda: None).result(30)


def column(model, col: int) -> list[str]:
    return [model.data(model.index(i, col)) for i in range(model.rowCount())]


def test_owner_view_live_seeding_and_consistent_sentences(qtbot, nodes, window):
    nodes.add_owner(with_history=False)
    cid = nodes.control_cfg.community_id
    window.attach_engine(nodes.control)
    c = window.control
    qtbot.waitUntil(lambda: c.isVisible() and c.title.text().startswith("Sample community"), timeout=FRESH_MS)
    # ON with no message yet: its own words, never "archive support is off" next to "ON"
    assert "ON" in c.effective.text()
    assert "no message has been stored yet" in c.due.text() and "off" not in c.due.text()
    assert c.seed_state.text() == "Not seeding: no archive has been built yet."
    # an archive built from the engine side (not the button) shows up within 2 s
    nodes.publish_history()
    nodes.control.archive_now(cid).result(120)
    truth = nodes.control.community_state(cid)
    qtbot.waitUntil(lambda: c.magnet.text() == truth.magnet and c.due.text().startswith("Next archive due"),
                    timeout=FRESH_MS)
    qtbot.waitUntil(lambda: len(c.chart.shown) == len({(a.start, a.end) for a in truth.archives}), timeout=FRESH_MS)
    # a member downloads from us: peers and uploaded bytes change with no engine event; the view follows
    nodes.add_member()
    nodes.run_engines()
    settle(lambda: nodes.member.state.archive_ids(cid, imported=True), nodes.member.bus)
    # uploaded bytes come with libtorrent's status updates (no engine event): woken by the torrent service
    settle(lambda: nodes.control.community_state(cid).uploaded > 0, nodes.t_control)

    def view_matches_engine_now() -> bool:              # libtorrent may still post a last status update
        truth = nodes.control.community_state(cid)
        return c.uploaded.text() == fmt_bytes(truth.uploaded) and c.peers.text() == str(truth.peers)
    qtbot.waitUntil(view_matches_engine_now, timeout=FRESH_MS)
    assert c.uploaded.text() != "0 B"
    # switched off from the engine side: the switch, the effective state and the due line agree within 2 s
    nodes.control.set_archive_support(cid, False).result(30)
    qtbot.waitUntil(lambda: not c.support.isChecked() and c.effective.text() == "Effective state: OFF."
                    and c.due.text() == "No archive scheduled: archive support is off.", timeout=FRESH_MS)
    assert window.communities.model.data(window.communities.model.index(0, 2)) == "Off"


def test_member_controls_follow_the_engine_and_refuse_an_inverted_range(qtbot, nodes, window):
    nodes.add_owner()
    cid = nodes.control_cfg.community_id
    nodes.control.archive_now(cid).result(120)
    owner = nodes.control.community_state(cid).archives
    nodes.add_member()                                   # saved policy: latest
    nodes.run_engines()
    settle(lambda: nodes.member.state.archive_ids(cid, imported=True), nodes.member.bus)
    window.attach_engine(nodes.member, history=nodes.history_of)
    m = window.member
    qtbot.waitUntil(lambda: m.isVisible() and m.model.rowCount() == len(owner), timeout=FRESH_MS)
    # the radio button is the saved policy; the pickers start at the archive span, not at 2000-01-01
    assert m.latest_btn.isChecked() and not m.all_btn.isChecked()
    lo, hi = min(a.start for a in owner), max(a.end for a in owner)
    assert (m.date_from.date(), m.date_to.date()) == (to_qdate(lo), to_qdate(hi - 1))
    assert m.date_from.date() != QDate(2000, 1, 1)
    latest = {a.archive_id for a in owner if a.end == hi}
    chosen = dict(zip([r.archive_id for r in m.model.rows()], column(m.model, CHOSEN)))
    assert {a for a, v in chosen.items() if v == "yes"} == latest
    # the policy changes on the engine side: radio, chosen column and counts follow within 2 s; the table is told
    # (dataChanged over the Chosen column of each row whose choice changed), so those rows repaint even though no
    # row's archive changed
    told: set[int] = set()
    m.model.dataChanged.connect(lambda tl, br, *_: tl.column() <= CHOSEN <= br.column() and told.update(
        range(tl.row(), br.row() + 1)))
    flipped = {m.model.row_of(a.archive_id) for a in owner if a.archive_id not in latest}
    assert flipped and None not in flipped
    nodes.member.set_download_policy(cid, "all").result(30)
    qtbot.waitUntil(lambda: m.all_btn.isChecked() and column(m.model, CHOSEN) == ["yes"] * len(owner)
                    and f"{len(owner)} chosen" in m.counts.text() and flipped <= told, timeout=FRESH_MS)
    # every archive gets imported: the table says so within 2 s of the engine
    settle(lambda: len(nodes.member.state.archive_ids(cid, imported=True)) == len(owner), nodes.member.bus)
    qtbot.waitUntil(lambda: column(m.model, STATE) == ["imported"] * len(owner)
                    and f"{len(owner)} imported" in m.counts.text(), timeout=FRESH_MS)
    # an inverted range is refused under the pickers and nothing reaches the engine
    m.range_btn.setChecked(True)
    m.date_from.setDate(to_qdate(hi - 1))
    m.date_to.setDate(to_qdate(lo))
    assert m.range_error.isVisible() and "before it starts" in m.range_error.text()
    sent = []
    m.policy_chosen.connect(lambda *a: sent.append(a))
    qtbot.mouseClick(m.apply_btn, Qt.MouseButton.LeftButton)   # the view decides within the click (no timer)
    assert sent == []
    engine_queue_drained(nodes.member, cid)
    assert nodes.member.community_state(cid).policy == DownloadPolicy.ALL
    assert m.range_error.isVisible()
    # a valid range again: the message goes, the choice is sent, and the controls stay on it
    m.date_to.setDate(to_qdate(hi - 1))
    assert not m.range_error.isVisible()
    qtbot.mouseClick(m.apply_btn, Qt.MouseButton.LeftButton)   # the command is queued within the click
    assert len(sent) == 1
    engine_queue_drained(nodes.member, cid)
    assert nodes.member.community_state(cid).policy == DownloadPolicy.RANGE
    qtbot.waitUntil(lambda: m.range_btn.isChecked() and "not applied" not in m.implied.text(), timeout=FRESH_MS)


class SlowTransport:
    """A Waku transport whose subscribe() takes seconds (a busy or far node) and that never publishes."""

    def __init__(self, delay: float):
        self.delay, self.release = delay, threading.Event()

    def subscribe(self, topics, callback):
        self.release.wait(self.delay)
        return lambda: None

    def query(self, topics, start, end, errors=None):
        return []

    def publish(self, *a):
        pass


def test_restart_lists_communities_at_once_from_saved_state(qtbot, window, tmp_path):
    """A restarted member with nothing to say (no event at all) is listed while its transport is still busy."""
    from core.node.community import CommunityConfig
    from core.node.engine import Engine
    from core.status.identity import CommunityIdentity
    cid = CommunityIdentity.generate().community_id
    cfg = CommunityConfig(cid, "Quiet community", "member", [cid + "00000000-0000-4000-8000-000000000000"],
                          policy="latest")
    slow = SlowTransport(30.0)
    eng = Engine(tmp_path / "node", transport=slow, settle=0.0)
    try:
        window.attach_engine(eng)
        t = threading.Thread(target=eng.add_community, args=(cfg,))
        t.start()
        qtbot.waitUntil(lambda: window.communities.model.rowCount() == 1, timeout=FRESH_MS)
        assert window.communities.model.rows()[0].name == "Quiet community"
        qtbot.waitUntil(lambda: window.member.isVisible() and window.member.latest_btn.isChecked(), timeout=FRESH_MS)
        assert window.member.date_from.date() != QDate(2000, 1, 1)
    finally:
        slow.release.set()
        t.join(10)
        eng.stop()


class FlakyEngine:
    """Its first snapshot fails (a folder being rewritten); there is no event afterwards."""

    def __init__(self, states):
        from core.node.events import EventBus
        self.bus, self.states, self.calls = EventBus(), states, 0

    def communities(self):
        self.calls += 1
        if self.calls == 1:
            raise OSError("index being replaced")
        return self.states


def test_a_failed_snapshot_heals_without_an_event(qtbot, window):
    state = CommunityState("0x02" + "ab" * 32, "Owned", Role.CONTROL, ArchiveSupport.ON)
    window.attach_engine(FlakyEngine([state]))
    qtbot.waitUntil(lambda: window.communities.model.rowCount() == 1, timeout=FRESH_MS)


def test_owner_sentences_have_their_own_words_for_each_case(qtbot):
    from gui.views.communities import health, is_bad, support_text
    from gui.views.control import ControlView
    v = ControlView(clock=lambda: 1_000)
    qtbot.addWidget(v)
    cid = "0x02" + "cd" * 32
    archive = ArchiveInfo("a1", 0, 604_800, 1000, local=True)
    broken = CommunityState(cid, "X", Role.CONTROL, ArchiveSupport.ON, archives=(archive,),
                            broken="corrupt-index: the index does not match data",
                            waiting_reason="archives stopped: corrupt-index: the index does not match data")
    v.show_state(broken)
    assert "STOPPED" in v.effective.text() and "ON" not in v.effective.text()
    assert "archives are stopped" in v.due.text() and "support is off" not in v.due.text()
    assert v.note.text().startswith("archives stopped: corrupt-index") and not v.archive_btn.isEnabled()
    assert "stopped" in v.seed_state.text()
    assert support_text(broken) == "Stopped" and health(broken).startswith("archives stopped")
    empty = CommunityState(cid, "X", Role.CONTROL, ArchiveSupport.ON)
    v.show_state(empty)
    assert "ON" in v.effective.text() and "no message has been stored yet" in v.due.text()
    assert "off" not in v.due.text() and "off" not in v.seed_state.text()
    off = CommunityState(cid, "X", Role.CONTROL, ArchiveSupport.OFF)
    v.show_state(off)
    assert v.effective.text() == "Effective state: OFF." and v.due.text().endswith("archive support is off.")
    glob = CommunityState(cid, "X", Role.CONTROL, ArchiveSupport.DISABLED_GLOBALLY)
    v.show_state(glob)
    assert "Settings" in v.effective.text() and "all communities" in v.due.text()
    seeding = CommunityState(cid, "X", Role.CONTROL, ArchiveSupport.ON, SeedingState.SEEDING_IDLE, archives=(archive,),
                             next_archive_at=2_000_000)
    v.show_state(seeding)
    assert v.due.text().startswith("Next archive due") and v.seed_state.text().startswith("Seeding, idle")
    starting = CommunityState(cid, "X", Role.CONTROL, ArchiveSupport.ON, SeedingState.STARTING, archives=(archive,))
    v.show_state(starting)      # libtorrent still checks the files: members are turned away, so not "idle"
    assert v.seed_state.text() == ("Starting: checking the archive files; members can connect once that is "
                                   "done.")
    assert health(starting) == "starting to seed (checking files)" and not is_bad(starting)
