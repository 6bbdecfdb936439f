"""The control node (core/node/control.py): the schedule's boundaries (a window closes exactly `grace` seconds
before it is built), each event with its data and reason, the build-failure retry, the on/off switch, the
announcement's fields and the owner's note, pinned against the survivors of `make mutation` (docs/QUALITY.md).
Real SQLite and archive folders, a fake clock, no network (support.owner)."""
from __future__ import annotations

import logging

import pytest

from core.archive.errors import ArchiveError, CorruptFolder
from core.node import control as C
from core.node import events as E
from core.node.state import ArchiveSupport
from core.status import topics as status_topics
from core.status.application_metadata import open_archive_link_envelope

from .support import T0, WEEK, owner

HOUR = 3600


def ev(o, name):
    return [e for e in o.events if e.name == name]


def archived(tmp_path, n, weeks, cfg=(), open_window=0, **open_kw):
    """An owner node (`cfg`: fields of its CommunityConfig) opened with `open_kw`, `n` messages over `weeks` weeks
    from T0 (and `open_window` more in the window after them), started one `grace` (an hour) after the last of those
    windows closed, so that all `weeks` are archived. Returns (owner, node, base): base is the oldest message's
    time, where the first window starts."""
    o = owner(tmp_path)
    for k, v in dict(cfg).items():
        setattr(o.cfg, k, v)
    node = o.open(**open_kw)
    o.store(o.gen.messages(n, start=T0, span=weeks * WEEK))
    base = o.oldest()
    if open_window:
        o.store(o.gen.messages(open_window, start=base + weeks * WEEK + 10, span=60))
    o.clock.set(base + weeks * WEEK + HOUR)
    node.start()
    return o, node, base


def test_constants():
    assert (C.CATCH_UP_LIMIT, C.BUILD_RETRY_SECONDS, C.RETENTION_RETRY_SECONDS) == (30 * 86400, 600, 3600)
    assert C.EARLIEST == -(1 << 62)


def test_one_line():
    assert C._one_line(ValueError("  first line\nsecond ")) == "first line"
    assert C._one_line(ValueError("")) == "ValueError" and C._one_line(KeyError()) == "KeyError"


def test_defaults_and_support_switch(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    assert node.grace == 3600 and node.interval == WEEK and node.retention == 30 * 86400
    assert node.cid == o.cid and node.support() is ArchiveSupport.ON
    assert node.magnet is None and node.broken is None and node.announcements == 0 and node.note() is None
    o.state.set_global_archive_support(False)
    assert node.support() is ArchiveSupport.DISABLED_GLOBALLY
    node.set_support(False)
    assert node.support() is ArchiveSupport.OFF and o.names()[-1] == E.HISTORY_ARCHIVES_UNSEEDED
    o.state.set_global_archive_support(True)
    node2 = o.open(grace=7)                               # a restart keeps the stored switch
    assert node2.support() is ArchiveSupport.OFF and node2.grace == 7


class Seeding:
    def __init__(self):
        self.stopped = 0

    def stop(self):
        self.stopped += 1


class Seeder:
    def __init__(self):
        self.calls, self.handles = [], []

    def seed(self, cid, data_dir, torrent):
        self.calls.append((cid, data_dir, torrent))
        self.handles.append(Seeding())
        return self.handles[-1]


def test_start_builds_seeds_announces_and_says_when_next(tmp_path):
    seeder = Seeder()
    o, node, base = archived(tmp_path, 50, 2, seeder=seeder)  # the second window closed exactly `grace` ago
    f = o.folder()
    assert len(f.entries) == 2 and f.last_end == base + 2 * WEEK
    assert seeder.calls == [(o.cid, o.paths.archive_dir, o.paths.torrent_dir / f"{o.cid}.torrent")]
    assert node.seeding is seeder.handles[0]
    created = ev(o, E.HISTORY_ARCHIVES_CREATED)
    assert len(created) == 1 and created[0].data["magnet"] == node.magnet and node.magnet.startswith("magnet:?")
    assert len(created[0].data["archives"]) == 2
    assert ev(o, E.HISTORY_ARCHIVES_SEEDING)[-1].data == {"magnet": node.magnet}
    due = base + 3 * WEEK + HOUR
    waiting = [e for e in ev(o, E.WAITING) if "until" in e.data]
    assert waiting[-1].data == {"until": due, "reason": f"next archive due at {due}: the current 7-day window "
                                                       "closes, plus 3600 s for late messages"}
    assert waiting[-1].community_id == o.cid
    assert node.next_archive_due() == due and node.announcements == 1
    assert o.state.archive_info(o.cid).last_message_archive_end_date == base + 2 * WEEK
    node.set_support(False)
    assert seeder.handles[0].stopped == 1 and node.seeding is None
    node.stop_seeding()                                   # nothing to stop: still says so
    assert o.names()[-1] == E.HISTORY_ARCHIVES_UNSEEDED


def test_whole_window_boundary(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    assert node.whole_windows_end() is None and node.next_archive_due() is None
    o.store(o.gen.messages(20, start=T0, span=WEEK))
    base = o.oldest()
    o.clock.set(base + WEEK + HOUR - 1)
    assert node.whole_windows_end() is None
    o.clock.set(base + WEEK + HOUR)
    assert node.whole_windows_end() == base + WEEK
    o.clock.set(base + 3 * WEEK + HOUR - 1)
    assert node.whole_windows_end() == base + 2 * WEEK
    assert node.next_archive_due() == base + WEEK + HOUR


def test_tick_builds_at_due_not_before_and_retries_after_failure(tmp_path):
    o = owner(tmp_path)
    calls = []

    def failing(*a, **k):
        calls.append(k["end"])
        raise ArchiveError("no space left\nsecond line", code="disk-full")
    node = o.open(builder=failing)
    o.store(o.gen.messages(20, start=T0, span=WEEK))
    base = o.oldest()
    o.clock.set(base + WEEK + HOUR - 1)
    assert node.tick() is None and calls == []
    o.clock.set(base + WEEK + HOUR)
    assert node.tick() is None and calls == [base + WEEK]
    err = ev(o, E.ERROR)[-1]
    assert err.data == {"code": "disk-full", "message": "no space left"} and node.broken is None
    o.clock.set(base + WEEK + HOUR + 599)
    node.tick()
    assert len(calls) == 1                                   # waits BUILD_RETRY_SECONDS
    o.clock.set(base + WEEK + HOUR + 600)
    node.tick()
    assert len(calls) == 2


def test_corrupt_folder_during_build_stops_the_community(tmp_path):
    o = owner(tmp_path)

    def corrupt(*a, **k):
        raise CorruptFolder("index is bad\nmore", code="index-overlap")
    seeder = Seeder()
    node = o.open(builder=corrupt, seeder=seeder)
    o.store(o.gen.messages(20, start=T0, span=WEEK))
    o.clock.set(o.oldest() + WEEK + HOUR)
    assert node.tick() is None
    assert node.broken == "index-overlap: index is bad" and ev(o, E.ERROR)[-1].data == {
        "code": "index-overlap", "message": "index is bad"}
    assert node.note() == "archives stopped: index-overlap: index is bad"
    assert node.tick() is None and node.next_archive_due() is None and node.apply_retention() == 0


def test_build_with_nothing_new(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    res = node.archive_now()
    assert res is not None and not res.new_archive_ids
    assert o.names()[-2:] == [E.CREATING_HISTORY_ARCHIVES, E.NO_HISTORY_ARCHIVES_CREATED] and node.magnet is None


def test_archive_now_builds_up_to_now_minus_grace(tmp_path):
    o = owner(tmp_path)
    seen = []

    def builder(db, cid, topics, adir, tdir, *, end, trackers, transform):
        seen.append((db, cid, topics, adir, tdir, end, trackers, transform))
        raise ArchiveError("stop", code="io-error")
    node = o.open(builder=builder, grace=100)
    o.clock.set(T0 + 5000)
    with pytest.raises(ArchiveError):
        node.archive_now()
    assert seen == [(o.paths.messages_db, o.cid, o.cfg.topics, o.paths.archive_dir, o.paths.torrent_dir, T0 + 4900,
                     (), None)]


def test_announce_fields(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    node.announce()
    assert o.announced == [] and node.announcements == 0          # no link yet
    node.magnet = "magnet:?xt=urn:btih:" + "ab" * 20
    o.clock.set(T0 + 1.5)
    node.announce()
    (envs,) = o.announced
    chats = o.cfg.announce_chat_ids()
    assert [t for t, _ in envs] == [status_topics.content_topic(c) for c in chats] and len(chats) == 2
    m = open_archive_link_envelope(envs[0][1], chats[0], o.cid)
    assert (m.clock, m.link) == ((T0 * 1000) + 1500, node.magnet) and node.announcements == 1
    node.announcer = None
    node.announce()
    assert node.announcements == 1


def test_catch_up_asks_from_the_last_end_or_30_days(tmp_path):
    o = owner(tmp_path)
    asked = []
    node = o.open(store_query=lambda topics, a, b: asked.append((sorted(topics), a, b)) or [])
    o.clock.set(T0 + 0.7)
    assert node.catch_up() == 0
    keys = sorted(status_topics.content_topic(c) for c in o.cfg.channel_chat_ids)
    assert asked == [(keys, T0 - 30 * 86400, T0)]
    assert ev(o, E.WAITING)[-1].data == {"reason": f"catching up missed messages from store nodes since "
                                                   f"{T0 - 30 * 86400}"}
    assert ev(o, E.WAITING)[-1].community_id == o.cid
    node.store_query = None
    assert node.catch_up() == 0 and len(asked) == 1


def test_catch_up_after_an_archive_starts_at_its_end(tmp_path):
    o, node, _ = archived(tmp_path, 20, 1)
    end = o.folder().last_end
    asked = []
    node.store_query = lambda topics, a, b: asked.append((a, b)) or []
    node.catch_up()
    assert asked == [(end, int(o.clock.now()))]


def test_late_messages_note_and_windows(tmp_path, caplog):
    o, node, base = archived(tmp_path, 30, 1)
    o.events.clear()
    late = list(o.gen.messages(2, start=base + 100, span=10))
    with caplog.at_level(logging.WARNING, logger="core.node.control"):
        assert o.store(late[:1]) == 1
    assert node.late_messages == 1 and node.late_windows() == {(base, base + WEEK): 1}
    assert node.note() == "1 message arrived after its week was archived (kept, not in any archive)"
    (e,) = ev(o, E.LATE_MESSAGES)
    assert e.community_id == o.cid and e.data == {"count": 1, "total": 1, "windows": [[base, base + WEEK, 1]]}
    assert f"{o.cid}: 1 messages arrived after their week was archived; kept in waku_messages, in no archive " \
           f"(1 in all; windows [{base}, {base + WEEK}): 1)" in caplog.text
    o.store(late[1:])
    assert node.late_messages == 2 and node.late_windows() == {(base, base + WEEK): 2}
    assert node.note() == "2 messages arrived after their week was archived (kept, not in any archive)"
    assert ev(o, E.LATE_MESSAGES)[-1].data == {"count": 1, "total": 2, "windows": [[base, base + WEEK, 1]]}
    o.store(late[1:])                                        # already known: no new event
    assert len(ev(o, E.LATE_MESSAGES)) == 2
    node.broken = "x: y"
    assert node.note() == ("archives stopped: x: y; 2 messages arrived after their week was archived (kept, not in "
                           "any archive)")


def test_retention_limit_is_the_older_of_retention_and_the_last_archive(tmp_path):
    o, node, base = archived(tmp_path, 60, 3, retention=2 * WEEK)  # three windows archived
    o.clock.set(base + 3 * WEEK + 2 * HOUR)
    before = o.stored()
    deleted = node.apply_retention()
    # cutoff = now - 2 weeks = base + 1 week + 2 h: rows of the first window and the first 2 h of the second go
    assert deleted == len(before) - len(o.stored()) > 0
    assert o.oldest() >= base + WEEK + 2 * HOUR - 1 or o.oldest() >= base + WEEK
    assert min(o.archived()[h][0] for h in o.stored()) >= base + WEEK


def test_retention_with_an_unreadable_index_waits_an_hour(tmp_path, caplog):
    o, node, base = archived(tmp_path, 30, 2, retention=WEEK)
    index = o.paths.archive_dir / o.cid / "index"
    good = index.read_bytes()
    index.write_bytes(b"\xff garbage")
    o.clock.set(base + 4 * WEEK)
    with caplog.at_level(logging.WARNING, logger="core.node.control"):
        assert node.apply_retention() == 0
    (line,) = [r.getMessage() for r in caplog.records]
    folder = o.paths.archive_dir / o.cid
    assert line == (f"{o.cid}: retention keeps every message: the archive index cannot be read (index-undecodable: "
                    f"archive folder {folder} is not trusted: the index does not decode (index does not decode as "
                    "WakuMessageArchiveIndex: Error parsing message with type 'archivist.IndexEntries'). Nothing was "
                    f"cut, changed or published; to recover run `archivist verify {folder}` and put a good index back)")
    assert node._retention_hold == base + 4 * WEEK + 3600
    index.write_bytes(good)
    o.clock.set(base + 4 * WEEK + 3600 - 1)
    assert node.apply_retention() == 0                     # held for the hour
    o.clock.set(base + 4 * WEEK + 3600)
    assert node.apply_retention() > 0                      # and not a second longer


def test_switching_back_on_starts_again(tmp_path):
    o = owner(tmp_path)
    asked = []
    node = o.open(store_query=lambda topics, a, b: asked.append(a) or [])
    node.set_support(False)
    assert o.state.community_support(o.cid) is False and asked == []
    node.set_support(True)                                   # start() runs: it catches up from store nodes
    assert o.state.community_support(o.cid) is True and node.support() is ArchiveSupport.ON
    assert len(asked) == 1 and o.names()[-1] == E.WAITING


def test_refusal_logs_once_and_stops_seeding(tmp_path, caplog):
    seeder = Seeder()
    o, node, _ = archived(tmp_path, 20, 1, seeder=seeder)
    handle = node.seeding
    assert handle is seeder.handles[0]
    o.events.clear()
    with caplog.at_level(logging.ERROR, logger="core.node.control"):
        node._refuse(CorruptFolder("bad index\nline two", code="index-gap"))
    assert [r.getMessage() for r in caplog.records] == [
        f"{o.cid}: archive folder cannot be trusted, nothing is built, seeded, announced or deleted: "
        "index-gap: bad index"]
    assert handle.stopped == 1 and node.seeding is None
    assert [(e.name, e.community_id) for e in o.events] == [(E.HISTORY_ARCHIVES_UNSEEDED, o.cid), (E.ERROR, o.cid)]
    node2 = o.open()                                         # nothing seeded: a refusal says only the error
    o.events.clear()
    node2._refuse(CorruptFolder("bad index", code="index-gap"))
    assert o.names() == [E.ERROR]


def test_a_build_failure_at_start_still_announces_a_corrupt_one_does_not(tmp_path, caplog):
    o = owner(tmp_path)

    def full(*a, **k):
        raise ArchiveError("no space", code="disk-full")
    node = o.open(builder=full)
    o.store(o.gen.messages(20, start=T0, span=2 * WEEK))
    o.clock.set(o.oldest() + 2 * WEEK + HOUR)
    node.magnet = "magnet:?xt=urn:btih:" + "cd" * 20
    with caplog.at_level(logging.ERROR, logger="core.node.control"):
        node.start()
    assert f"{o.cid}: archive build failed, retrying in 600 s: disk-full: no space" in [
        r.getMessage() for r in caplog.records]
    assert node.broken is None and node._retry_at == o.clock.now() + 600 and E.WAITING in o.names()

    assert [e.community_id for e in ev(o, E.ERROR)] == [o.cid]

    def corrupt(*a, **k):
        raise CorruptFolder("bad", code="index-gap")
    o.events.clear()
    o.announced.clear()
    node = o.open(builder=corrupt)
    node.magnet = "magnet:?xt=urn:btih:" + "cd" * 20            # start stops before announcing it
    node.start()
    assert node.broken == "index-gap: bad" and o.names()[-1] == E.ERROR and node.announcements == 0
    assert o.announced == []


def test_archive_now_announces(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    o.store(o.gen.messages(20, start=T0, span=WEEK))
    o.clock.set(o.oldest() + 2 * 86400)
    res = node.archive_now()
    assert res.new_archive_ids and node.announcements == 1 and len(o.announced) == 1


def test_codex_owner_is_made_once_with_the_node_settings(tmp_path):
    o = owner(tmp_path)
    o.cfg.backend, o.cfg.codex_api = "codex", "http://127.0.0.1:9/api/codex/v1/"
    node = o.open(interval=1234)
    c = node.codex_owner()
    assert c is node.codex_owner()
    assert c.client.base_url == "http://127.0.0.1:9/api/codex/v1" and c.community_id == o.cid
    assert c.dir == o.paths.root / "codex" / o.cid / "codex" and c.transform is None
    assert c.clock is o.clock.now or c.clock() == o.clock.now() and c.interval == 1234
    o.clock.set(T0 + 5)
    assert c.clock() == T0 + 5 and c.interval == 1234


def test_stop_seeding_without_a_stop_method(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    node.seeding = object()
    node.stop_seeding()
    assert node.seeding is None and [(e.name, e.community_id) for e in o.events][-1] == (
        E.HISTORY_ARCHIVES_UNSEEDED, o.cid)


def test_keys_path_only_for_encrypted_communities(tmp_path):
    from core.status.archive_encryption import GroupKeyStore
    o = owner(tmp_path)
    keys = GroupKeyStore(tmp_path / "keys.json")
    node = o.open(group_keys=keys)
    assert node._keys_path() is None
    o.cfg.encrypted = True
    assert node._keys_path() == str(tmp_path / "keys.json")


def test_tick_builds_and_announces_only_when_on(tmp_path):
    o = owner(tmp_path)
    node = o.open()
    o.store(o.gen.messages(20, start=T0, span=WEEK))
    o.clock.set(o.oldest() + WEEK + HOUR)
    node.set_support(False)
    assert node.tick() is None
    assert not (o.paths.archive_dir / o.cid / "index").exists()
    o.state.set_community_support(o.cid, True)
    res = node.tick()
    assert res is not None and res.new_archive_ids and node.announcements == 1 and len(o.announced) == 1


class FakeCodex:
    def __init__(self):
        self.kept, self.last_end, self.index_cid = 0, None, None

    def keep_alive(self):
        self.kept += 1


def test_codex_keep_alive_once_a_day(tmp_path):
    o = owner(tmp_path)
    o.cfg.backend = "codex"
    node = o.open()
    node._codex = FakeCodex()
    o.clock.set(T0)
    node.tick()
    assert node._codex.kept == 1 and node._keep_alive_at == T0
    o.clock.set(T0 + 24 * 3600 - 1)
    node.tick()
    assert node._codex.kept == 1
    o.clock.set(T0 + 24 * 3600)
    node.tick()
    assert node._codex.kept == 2 and node._keep_alive_at == T0 + 24 * 3600
    o.cfg.backend = "torrent"
    o.clock.set(T0 + 9 * 24 * 3600)
    node.tick()
    assert node._codex.kept == 2


def test_codex_owner_of_an_encrypted_community_encrypts(tmp_path):
    from core.status.archive_encryption import GroupKeyStore, HashRatchetEncryptor
    o = owner(tmp_path)
    o.cfg.backend, o.cfg.codex_api, o.cfg.encrypted = "codex", "http://127.0.0.1:9/api/codex/v1", True
    node = o.open(group_keys=GroupKeyStore())
    assert isinstance(node.codex_owner().transform, HashRatchetEncryptor)


class Inline:
    """An offloader that runs the job here (the worker's code, the node's arguments)."""

    def __init__(self):
        self.jobs = []

    def run(self, fn, *args, **kw):
        self.jobs.append(fn.__name__)
        return fn(*args, **kw)


def test_offloaded_build_and_retention_prove_the_same(tmp_path):
    off = Inline()
    o, node, base = archived(tmp_path, 40, 2, retention=WEEK, offload=off)
    assert off.jobs == ["build_job"] and len(o.folder().entries) == 2
    o.clock.set(base + 3 * WEEK)
    before = o.stored()
    deleted = node.apply_retention()
    assert "torrent_window_ids" in off.jobs and deleted > 0
    gone = before - o.stored()
    rows = o.archived()
    assert len(gone) == deleted and all(rows[h][1] <= base + 2 * WEEK for h in gone)


def test_late_rows_of_two_windows_and_of_no_window(tmp_path):
    o, node, base = archived(tmp_path, 40, 2)
    a, b = list(o.gen.messages(1, start=base + 50, span=1)), list(o.gen.messages(1, start=base + WEEK + 50, span=1))
    early = list(o.gen.messages(1, start=base - 100, span=1))          # before the first archive: in no window
    assert o.store(a + b + early) == 3
    ts = early[0].timestamp_ns // 10 ** 9
    assert node.late_windows() == {(base, base + WEEK): 1, (base + WEEK, base + 2 * WEEK): 1, (ts, base): 1}


def test_unprovable_archives_keep_every_message_and_say_so(tmp_path, caplog):
    o, node, base = archived(tmp_path, 30, 2, retention=WEEK)
    (o.paths.torrent_dir / f"{o.cid}.torrent").unlink()
    o.clock.set(base + 4 * WEEK)
    before = o.stored()
    with caplog.at_level(logging.WARNING, logger="core.node.control"):
        assert node.apply_retention() == 0
    assert o.stored() == before
    torrent = o.paths.torrent_dir / f"{o.cid}.torrent"
    assert [r.getMessage() for r in caplog.records] == [
        f"{o.cid}: keeping every message: the archives cannot be proven ([Errno 2] No such file or directory: "
        f"'{torrent}')"]
