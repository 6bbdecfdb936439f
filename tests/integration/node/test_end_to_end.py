"""A control node with history builds, seeds and announces; a member joins later, gets the link from the
store, waits the settle time, downloads and imports; its history equals the control node's."""
from core.node import events as E
from core.node.links import FORGED, OLDER_CLOCK, REPLAYED, MALFORMED
from core.status import topics as status_topics
from core.status.application_metadata import archive_link_envelopes
from core.status.identity import CommunityIdentity

from .conftest import HISTORY_START, WEEK, start_control


def _drive_member(pair, timeout=90.0):
    node = pair.member.nodes[pair.member_cfg.community_id]
    pair.member.tick_all()[0].result(10)
    assert node.job is None, "the member must wait the settle time before acting"
    pair.clock.advance(21)
    pair.member.tick_all()[0].result(10)
    assert node.job is not None
    assert node.job.done.wait(timeout), node.job.snapshot()
    pair.member.tick_all()[0].result(60)
    return node


def _expected(pair, start=None, end=None):
    out = {}
    for m in pair.sent:
        ts = m.timestamp_ns // 10 ** 9
        if (start is None or ts >= start) and (end is None or ts < end):
            out["0x" + m.hash.hex()] = m.text
    return out


def test_control_announces_and_member_imports_all(pair):
    events = []
    pair.member.bus.subscribe(lambda e: events.append(e.name))
    start_control(pair)
    control = pair.control.nodes[pair.control_cfg.community_id]
    assert control.magnet and control.announcements >= 1
    cid = pair.control_cfg.community_id
    pair.member.add_community(pair.member_cfg).result(30)
    node = _drive_member(pair)
    rows = pair.history.messages(cid, limit=100_000)
    assert {r["id"]: r["text"] for r in rows} == _expected(pair)
    assert pair.member.state.archive_ids(cid, imported=True) == set(control_folder_ids(pair))
    assert E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED in events and E.IMPORTING_HISTORY_ARCHIVE_MESSAGES in events
    assert node.waiting_reason.startswith("up to date")


def control_folder_ids(pair):
    from core.archive.folder import ArchiveFolder
    return ArchiveFolder(pair.control.paths.archive_dir / pair.control_cfg.community_id).entries


def test_member_latest_only_then_range(pair):
    pair.member_cfg.policy = "latest"
    start_control(pair)
    cid = pair.control_cfg.community_id
    entries = control_folder_ids(pair)
    latest = max(entries.values(), key=lambda e: e.end)
    pair.member.add_community(pair.member_cfg).result(30)
    _drive_member(pair)
    got = {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)}
    assert got == _expected(pair, latest.start, latest.end)
    # then a time range covering weeks 1-2: the archives overlapping it are added, the latest is kept
    lo, hi = HISTORY_START + WEEK, HISTORY_START + 2 * WEEK
    pair.member.set_download_policy(cid, "range", lo, hi).result(10)
    node = pair.member.nodes[cid]
    pair.member.tick_all()[0].result(10)
    assert node.job is not None and node.job.done.wait(60), node.job.snapshot()
    pair.member.tick_all()[0].result(60)
    chosen = [e for e in entries.values() if e.start < hi and e.end > lo]
    want = _expected(pair, latest.start, latest.end)
    for e in chosen:
        want |= _expected(pair, e.start, e.end)
    got = {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)}
    assert got == want


def test_rejected_links_are_counted(pair):
    start_control(pair)
    cid = pair.control_cfg.community_id
    pair.member.add_community(pair.member_cfg).result(30)
    node = pair.member.nodes[cid]
    chat = status_topics.magnetlinks_chat_id(cid)
    accepted_clock = pair.member.state.archive_info(cid).magnetlink_clock
    # the control node announces on both channels: the member saw the second copy as a replay
    before = pair.member.state.rejections(cid)
    assert before == {REPLAYED: 1}
    assert accepted_clock > 0
    forger = CommunityIdentity.generate().private_key
    env = archive_link_envelopes(forger, accepted_clock + 10, "magnet:?xt=urn:btih:" + "ab" * 20, cid, (chat,))[0][1]
    assert node.on_envelope(env, chat).reason == FORGED
    key = pair.gen.community.private_key
    old = archive_link_envelopes(key, accepted_clock - 1, "magnet:?xt=urn:btih:" + "cd" * 20, cid, (chat,))[0][1]
    assert node.on_envelope(old, chat).reason == OLDER_CLOCK
    same = archive_link_envelopes(key, accepted_clock, control_magnet(pair), cid, (chat,))[0][1]
    assert node.on_envelope(same, chat).reason == REPLAYED
    assert node.on_envelope(b"\x00garbage", chat).reason == MALFORMED
    assert pair.member.state.rejections(cid) == {FORGED: 1, OLDER_CLOCK: 1, REPLAYED: 2, MALFORMED: 1}


def control_magnet(pair):
    return pair.control.nodes[pair.control_cfg.community_id].magnet


def test_import_replaces_local_copies_and_never_deletes(pair):
    """The archive's copy of a message replaces the local one; local messages no archive holds are kept, inside
    the archived window too (core/history_import.py: an import never removes a message)."""
    def row(h: str, ts: int, text: str) -> tuple:
        return (cid, bytes.fromhex(h[2:]), ts, b"\0" * 4, None, "chat", 0, None, 1, text, b"", None)
    pair.member_cfg.policy = "latest"
    start_control(pair)
    cid = pair.control_cfg.community_id
    latest = max(control_folder_ids(pair).values(), key=lambda e: e.end)
    in_range = next(m.hash.hex() for m in pair.sent if latest.start <= m.timestamp_ns // 10 ** 9 < latest.end)
    inside = row("0x" + "11" * 32, latest.start + 5, "stale local copy")
    edited = row("0x" + in_range, latest.start + 7, "edited locally")
    outside = row("0x" + "22" * 32, latest.start - 5, "older, not archived here")
    after = row("0x" + "33" * 32, latest.end + 5, "newer live message")
    pair.history.add_live(cid, [inside, edited, outside, after])
    pair.member.add_community(pair.member_cfg).result(30)
    _drive_member(pair)
    got = {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)}
    want = _expected(pair, latest.start, latest.end)
    key = lambda r: "0x" + r[1].hex()  # noqa: E731
    kept = (key(outside), key(after), key(inside))
    assert {k: v for k, v in got.items() if k not in kept} == want
    assert all(got[key(r)] == r[9] for r in (outside, after, inside))
    assert got[key(edited)] == want[key(edited)] != "edited locally"


def test_a_lost_history_is_imported_again_at_restart(pair, tmp_path):
    """The history database, not state.sqlite, says what is imported: a member whose history file is lost (or
    restored from an older backup) imports the archives again from its folder at the next start, instead of
    trusting state.sqlite's flag and showing an empty history forever. Fails if MemberNode plans from the
    state's flag alone."""
    from core.node.engine import Engine
    from core.node.hydrate import reference_hydrator
    from core.storage.member_history import MemberHistory
    start_control(pair)
    cid = pair.control_cfg.community_id
    pair.member.add_community(pair.member_cfg).result(30)
    _drive_member(pair)
    assert len(pair.history.messages(cid, limit=100_000)) == len(pair.sent)

    old = pair.member
    old.stop()
    pair.history.close()
    (old.paths.root / "history.sqlite").rename(tmp_path / "lost.sqlite")     # the history file is gone
    for side in ("-wal", "-shm"):
        (old.paths.root / f"history.sqlite{side}").unlink(missing_ok=True)
    pair.history = MemberHistory(old.paths.root / "history.sqlite")
    pair.member = Engine(old.paths.root, clock=pair.clock, transport=pair.hub, torrents=old.torrents,
                         peers=old.peers, hydrator=reference_hydrator(pair.history))
    assert pair.member.state.archive_ids(cid, imported=True), "state.sqlite still says everything is imported"
    pair.member.add_community(pair.member_cfg).result(60)
    rows = pair.history.messages(cid, limit=100_000)
    assert {r["id"]: r["text"] for r in rows} == _expected(pair)
    assert pair.member.state.archive_ids(cid, imported=True) == set(control_folder_ids(pair))
