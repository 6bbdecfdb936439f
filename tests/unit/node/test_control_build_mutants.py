"""The control node's build (core/node/control.py `build`): its default, its events and their community, the
offloaded build (the last whole window, the trackers, the link in the event), an encrypted community's archives and
index as written, and the Codex backend's build, link and restart; pinned against the survivors of `make mutation`
(docs/QUALITY.md). Real SQLite and archive folders, a fake clock (support.owner), a local Codex test node."""
from __future__ import annotations

import pytest

from core.archive import codec
from core.archive.errors import DecodeError
from core.archive.folder import ArchiveFolder
from core.node import events as E

from .support import WEEK
from .test_control_mutants import HOUR, Inline, archived, ev
from .test_control_retention_mutants import encrypted_archived

TRACKER = "udp://tracker.example:6969/announce"


def test_build_announces_by_default_and_says_when_nothing_is_new(tmp_path):
    o, node, base = archived(tmp_path, 20, 1)
    assert node.announcements == 1
    o.events.clear()
    res = node.build()
    assert res.new_archive_ids == [] and node.announcements == 1
    assert [(e.name, e.community_id) for e in o.events] == [(E.CREATING_HISTORY_ARCHIVES, o.cid),
                                                            (E.NO_HISTORY_ARCHIVES_CREATED, o.cid)]
    o.store(o.gen.messages(3, start=base + WEEK, span=HOUR))
    o.clock.set(base + WEEK + 3 * HOUR)
    assert node.build().new_archive_ids and node.announcements == 2      # announce=True unless told otherwise


def test_offloaded_build_stops_at_the_last_whole_window_and_keeps_the_trackers(tmp_path):
    off = Inline()
    o, node, base = archived(tmp_path, 30, 2, cfg={"trackers": (TRACKER,)}, open_window=2, offload=off)
    assert off.jobs.count("build_job") == 1 and len(o.folder().entries) == 2     # the third window is still open
    assert "tr=udp%3A%2F%2Ftracker.example%3A6969%2Fannounce" in node.magnet
    assert ev(o, E.HISTORY_ARCHIVES_CREATED)[0].data["magnet"] == node.magnet


@pytest.mark.parametrize("offload", [None, Inline()], ids=["here", "offloaded"])
def test_encrypted_community_writes_encrypted_archives_and_index(tmp_path, offload):
    o, node, base = encrypted_archived(tmp_path, 31, offload)
    path = o.paths.archive_dir / o.cid
    with pytest.raises(DecodeError):
        codec.decode_index((path / "index").read_bytes())               # the index is not plain
    f = ArchiveFolder(path, recover=False, index_codec=node._index_codec())
    assert len(f.entries) == 2
    for aid in f.entries:
        with pytest.raises(DecodeError):
            codec.decode_archive(f.read_raw(aid))                       # nor is any archive
        assert codec.decode_archive(f.index_codec.open_archive(f.read_raw(aid))).messages   # with the key
    restarted = o.open(retention=WEEK, offload=offload, group_keys=node.group_keys)
    restarted.start()                                                   # the folder reopens with the key
    assert restarted.broken is None and restarted.magnet == node.magnet


def test_codex_build_publishes_the_index_cid_and_a_restart_keeps_it(tmp_path):
    from tests.support.codex_node import CodexTestNode
    codex = CodexTestNode(tmp_path / "codex").start()
    try:
        o, node, base = archived(tmp_path, 30, 2, cfg={"backend": "codex", "codex_api": codex.url}, open_window=2)
        owner_ = node.codex_owner()
        assert len(owner_.entries) == 2                                 # the third window is still open
        assert node.magnet == owner_.index_cid and node.magnet
        (created,) = ev(o, E.HISTORY_ARCHIVES_CREATED)
        assert created.data == {"link": node.magnet, "archives": created.data["archives"]}
        assert created.community_id == o.cid and [a["to"] for a in created.data["archives"]] == [base + WEEK,
                                                                                                  base + 2 * WEEK]
        (seeding,) = ev(o, E.HISTORY_ARCHIVES_SEEDING)
        assert seeding.data == {"link": node.magnet} and seeding.community_id == o.cid
        assert o.state.archive_info(o.cid).last_message_archive_end_date == base + 2 * WEEK
        magnet = node.magnet
        node = o.open()
        node.start()
        assert node.magnet == magnet and node.broken is None
    finally:
        codex.stop()


def test_announce_uses_the_chats_the_community_chose(tmp_path):
    from core.status import topics
    o, node, base = archived(tmp_path, 20, 1, cfg={"announce_on": ("magnetlinks",)})
    (envs,) = o.announced
    assert [t for t, _ in envs] == [topics.content_topic(topics.magnetlinks_chat_id(o.cid))]


def test_restart_without_the_torrent_makes_it_again_with_the_trackers(tmp_path):
    o, node, base = archived(tmp_path, 20, 1, cfg={"trackers": ("udp://tracker.example:6969/announce",)})
    magnet = node.magnet
    (o.paths.torrent_dir / f"{o.cid}.torrent").unlink()
    node = o.open()
    node.start()
    assert node.magnet == magnet and "tr=udp%3A%2F%2Ftracker.example%3A6969%2Fannounce" in magnet
