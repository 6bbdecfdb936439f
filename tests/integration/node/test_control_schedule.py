"""The control node's schedule with a fake clock: weekly ticks, offline catch-up, retention."""
from core.archive.folder import ArchiveFolder
from core.node.engine import Engine

from .conftest import HISTORY_START, WEEK, start_control


def _folder(pair):
    return ArchiveFolder(pair.control.paths.archive_dir / pair.control_cfg.community_id)


def test_weekly_tick_builds_only_when_due(pair):
    start_control(pair)
    cid = pair.control_cfg.community_id
    node = pair.control.nodes[cid]
    n = len(_folder(pair).entries)
    due = node.next_archive_due()
    assert due == _folder(pair).last_end + WEEK + node.grace      # the window closes, then the grace period
    pair.clock.set(due - 1)
    assert pair.control.tick_all()[0].result(30) is None
    assert len(_folder(pair).entries) == n
    later = [m for m in pair.gen.messages(50, start=due - node.grace - WEEK + 60, span=3000)]
    for m in later:
        pair.hub.publish(m.content_topic, m.envelope, m.timestamp_ns)
    pair.clock.set(due)
    res = pair.control.tick_all()[0].result(30)
    assert res is not None and len(res.new_archive_ids) == 1 and res.messages == 50


def test_offline_for_30_days_catches_up_in_order_and_announces_once(pair, tmp_path):
    start_control(pair)
    cid = pair.control_cfg.community_id
    before = set(_folder(pair).entries)
    last_end = _folder(pair).last_end
    torrents = pair.control.torrents
    pair.control.stop()
    # while the owner is away for 30 days, members keep chatting; store nodes keep the messages
    away = list(pair.gen.messages(400, start=last_end + 10, span=29 * 24 * 3600))
    for m in away:
        pair.hub.publish(m.content_topic, m.envelope, m.timestamp_ns)
    pair.clock.set(last_end + 30 * 24 * 3600)
    announced = []
    real = pair.hub.publish
    pair.hub.publish = lambda ct, p, ts: (announced.append(ct), real(ct, p, ts))
    restarted = Engine(pair.control.paths.root, clock=pair.clock, transport=pair.hub, torrents=torrents)
    pair.control = restarted
    restarted.add_community(pair.control_cfg).result(120)
    f = _folder(pair)
    new = [(aid, e) for aid, e in f.ordered() if aid not in before]
    assert len(new) == 4                      # the four whole weeks; the partial fifth waits for its week to end
    starts = [e.start for _, e in new]
    assert starts == [last_end + k * WEEK for k in range(4)] and new[-1][1].end == last_end + 4 * WEEK
    assert sum(len(f.read_archive(a).messages) for a, _ in new) == \
        sum(1 for m in away if m.timestamp_ns // 10 ** 9 < last_end + 4 * WEEK)
    assert restarted.nodes[cid].next_archive_due() == last_end + 5 * WEEK + restarted.nodes[cid].grace
    link_topics = {__import__("core.status.topics", fromlist=["x"]).content_topic(c)
                   for c in pair.control_cfg.announce_chat_ids()}
    assert len([t for t in announced if t in link_topics]) == len(link_topics)  # once, on each channel
    assert restarted.nodes[cid].announcements == 1


def test_retention_drops_archived_messages_older_than_30_days(pair):
    import sqlite3
    start_control(pair)                      # its tick built the archives and applied retention
    cid = pair.control_cfg.community_id
    db = sqlite3.connect(pair.control.paths.messages_db)

    def stored():
        return sorted(r[0] for r in db.execute("SELECT timestamp FROM waku_messages"))
    cutoff = int(pair.clock.now()) - 30 * 24 * 3600
    assert stored() == sorted(m.timestamp_ns // 10 ** 9 for m in pair.sent if m.timestamp_ns // 10 ** 9 >= cutoff)
    # a week later, another week of archived messages falls out; unarchived messages are never dropped
    late = list(pair.gen.messages(30, start=int(pair.clock.now()) + 100, span=3600))
    for m in late:
        pair.hub.publish(m.content_topic, m.envelope, m.timestamp_ns)
    pair.control.submit(cid, lambda: None).result(30)
    pair.clock.advance(8 * 24 * 3600)
    node = pair.control.nodes[cid]
    node.retention = 1                       # everything archived is past retention now
    dropped_before_build = pair.control.submit(cid, node.apply_retention).result(30)
    assert dropped_before_build > 0
    assert stored() == sorted(m.timestamp_ns // 10 ** 9 for m in late)   # not archived yet: kept
    db.close()
