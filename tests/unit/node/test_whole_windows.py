"""The control node's schedule: only whole 7-day windows, closed a grace period before they are built (spec 61,
offline process step 4; status-go builds only when 7 days have passed since the last archive). Fake clock."""
from __future__ import annotations

from core.node import events as E

from .support import T0, WEEK, owner

HOUR = 3600


def test_restart_55_seconds_after_last_archive_builds_nothing_and_announces_existing_link(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    o.store(o.gen.messages(300, start=T0, span=3 * WEEK))
    built_at = o.oldest() + 3 * WEEK + 2 * HOUR
    o.clock.set(built_at)
    node.start()
    before = dict(o.folder().entries)
    last_end = o.folder().last_end
    magnet = node.magnet
    assert before and magnet and node.announcements == 1
    # a member keeps chatting after the last archive's end; the owner's node restarts 55 s after that build
    assert o.store(o.gen.messages(1, start=last_end + 10, span=1)) == 1
    o.clock.set(built_at + 55)
    o.events.clear()
    o.announced.clear()
    node = o.open()
    node.start()
    assert o.folder().entries == before, "a restart must not build a partial window"
    assert E.HISTORY_ARCHIVES_CREATED not in o.names()
    assert node.magnet == magnet and node.announcements == 1 and len(o.announced) == 1
    seeding = [e for e in o.events if e.name == E.HISTORY_ARCHIVES_SEEDING]
    assert seeding and seeding[0].data["magnet"] == magnet
    # the next build is scheduled one whole window after the last one, plus the grace period
    assert node.next_archive_due() == last_end + WEEK + getattr(node, "grace", 0)


def test_message_ten_minutes_before_window_end_arriving_30_minutes_late_is_archived(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    o.store(o.gen.messages(100, start=T0, span=WEEK - HOUR))
    o.clock.set(o.oldest() + WEEK + 2 * HOUR)
    node.start()
    start = o.folder().last_end                       # the window [start, start + WEEK) is next
    end = start + WEEK
    on_time = list(o.gen.messages(60, start=start + 60, span=WEEK - HOUR))
    late = list(o.gen.messages(1, start=end - 600, span=1))[0]
    arrivals = sorted([(m.timestamp_ns // 10 ** 9 + 5, m) for m in on_time]
                      + [(late.timestamp_ns // 10 ** 9 + 1800, late)], key=lambda a: a[0])
    # the engine's timer: every 5 minutes from before the window closes until well after, delivering what the
    # relay hands over by then
    t = min(a for a, _ in arrivals)
    while t <= end + 3 * HOUR:
        o.clock.set(t)
        while arrivals and arrivals[0][0] <= t:
            o.store([arrivals.pop(0)[1]])
        node.tick()
        t += 300
    archived = o.archived()
    assert archived.get(late.hash) == (start, end), "the late message must land in its own window's archive"
    assert all(archived.get(m.hash) == (start, end) for m in on_time)


def test_first_build_starts_at_oldest_message_and_builds_whole_windows_only(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    msgs = list(o.gen.messages(250, start=T0 + 500, span=2 * WEEK + 3 * 24 * HOUR))
    o.store(msgs)
    oldest = min(m.timestamp_ns // 10 ** 9 for m in msgs)
    o.clock.set(oldest + 2 * WEEK + 3 * 24 * HOUR)
    node.start()
    windows = sorted({(e.start, e.end) for e in o.folder().entries.values()})
    assert windows == [(oldest, oldest + WEEK), (oldest + WEEK, oldest + 2 * WEEK)]
    archived = o.archived()
    assert {m.hash for m in msgs if m.timestamp_ns // 10 ** 9 < oldest + 2 * WEEK} == set(archived)
    assert node.next_archive_due() == oldest + 3 * WEEK + node.grace
    # ticks before the third window has closed (plus grace) build nothing
    for t in (oldest + 3 * WEEK - 1, oldest + 3 * WEEK + node.grace - 1):
        o.clock.set(t)
        assert node.tick() is None
    assert len(o.folder().entries) == 2
    o.clock.set(oldest + 3 * WEEK + node.grace)
    res = node.tick()
    assert res is not None and {(e.start, e.end) for e in o.folder().entries.values()} == \
        {(oldest, oldest + WEEK), (oldest + WEEK, oldest + 2 * WEEK), (oldest + 2 * WEEK, oldest + 3 * WEEK)}


def test_archive_now_builds_a_partial_window_up_to_now_minus_grace(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    msgs = list(o.gen.messages(120, start=T0, span=10 * 24 * HOUR))
    o.store(msgs)
    now = T0 + 10 * 24 * HOUR
    o.clock.set(now)
    node.start()                                   # one whole window
    assert len({(e.start, e.end) for e in o.folder().entries.values()}) == 1
    res = node.build()                             # the owner's explicit "Archive now"
    assert res.new_archive_ids
    assert o.folder().last_end == now - node.grace
    archived = o.archived()
    assert {m.hash for m in msgs if m.timestamp_ns // 10 ** 9 < now - node.grace} == set(archived)
    assert any(m.timestamp_ns // 10 ** 9 >= now - node.grace for m in msgs)   # the last hour waits


def test_nothing_due_publishes_the_reason_and_empty_weeks_do_not_rebuild_every_tick(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    o.store(o.gen.messages(50, start=T0, span=WEEK - HOUR))
    o.clock.set(o.oldest() + WEEK + 2 * HOUR)
    node.start()
    last_end = o.folder().last_end
    waits = [e for e in o.events if e.name == E.WAITING and "next archive" in e.data.get("reason", "")]
    assert waits and waits[-1].data["until"] == last_end + WEEK + node.grace
    # a silent community: the next window is due, empty, and is not retried on every tick
    o.clock.set(last_end + WEEK + node.grace)
    o.events.clear()
    node.tick()
    node.tick()
    assert o.names().count(E.CREATING_HISTORY_ARCHIVES) == 1
    assert node.next_archive_due() == last_end + 2 * WEEK + node.grace


def test_grace_period_is_configurable(tmp_path):
    from core.node.config import from_dict
    s = from_dict({"data_dir": str(tmp_path), "grace_period": 600})
    assert s.grace_period == 600
    assert from_dict({"data_dir": str(tmp_path)}).grace_period == 3600
    o = owner(tmp_path)
    node = o.open(grace=600)
    assert node.grace == 600
