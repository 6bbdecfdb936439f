"""The control node's retention and late-message classification (core/node/control.py `_classify`,
`_window_ids`, `_record_late`): each window checked against its own archives, the worker given the key file of an
encrypted community, the log lines that say what was kept and why and what was deleted, a restart with no row left;
pinned against the survivors of `make mutation` (docs/QUALITY.md). Real SQLite and archive folders, a fake clock
(support.owner); the schedule, events and announcement: test_control_mutants.py."""
from __future__ import annotations

import logging
import os
import sqlite3

from core.archive.constants import PIECE_LENGTH
from core.status.archive_encryption import GroupKey, GroupKeyStore
from core.status.identity import community_id_bytes

from .support import T0, WEEK, owner
from .test_control_mutants import HOUR, Inline, archived


def encrypted_archived(tmp_path, seed, off, **cfg):
    """An encrypted community (its key in a key file a worker can read) with an offloader, two weeks archived;
    `cfg` sets fields of its CommunityConfig first. Returns (owner, node, base)."""
    o = owner(tmp_path, seed=seed)
    for k, v in {**cfg, "encrypted": True}.items():
        setattr(o.cfg, k, v)
    keys = GroupKeyStore(tmp_path / "keys.json")
    keys.add(GroupKey(community_id_bytes(o.cid), os.urandom(32), 1_700_000_000_000))
    node = o.open(retention=WEEK, offload=off, group_keys=keys)
    o.store(o.gen.messages(40, start=T0, span=2 * WEEK))
    base = o.oldest()
    o.clock.set(base + 2 * WEEK + HOUR)
    node.start()
    return o, node, base


def test_offloaded_retention_of_an_encrypted_community_reads_the_key_file(tmp_path):
    off = Inline()
    o, node, base = encrypted_archived(tmp_path, 31, off)
    o.clock.set(base + 5 * WEEK)
    assert node.apply_retention() == 40 and "torrent_window_ids" in off.jobs    # the worker opened them with it


def test_each_window_is_checked_against_its_own_archives(tmp_path, caplog):
    """Late rows of two windows in one batch: each window's rows are compared with that window's messages (the
    cache of message IDs is per window), so an archived row stored again beside a late one is not late."""
    o, node, base = archived(tmp_path, 40, 2)
    con = sqlite3.connect(o.paths.messages_db)
    try:
        ts2 = con.execute("SELECT MIN(timestamp) FROM waku_messages WHERE timestamp >= ?", (base + WEEK,)).fetchone()[0]
    finally:
        con.close()
    a = list(o.gen.messages(1, start=base + 50, span=1))
    b = list(o.gen.messages(1, start=ts2, span=1))           # late, beside an archived row of the same second
    with caplog.at_level(logging.WARNING, logger="core.node.control"):
        assert o.store(a + b) == 2
    assert node.late_windows() == {(base, base + WEEK): 1, (base + WEEK, base + 2 * WEEK): 1}
    assert f"{o.cid}: 2 messages arrived after their week was archived; kept in waku_messages, in no archive (2 in " \
           f"all; windows [{base}, {base + WEEK}): 1, [{base + WEEK}, {base + 2 * WEEK}): 1)" in caplog.text


def test_an_archive_that_cannot_be_proven_keeps_its_window_and_retention_says_what_it_deleted(tmp_path, caplog):
    o, node, base = archived(tmp_path, 40, 2, retention=WEEK)
    f = o.folder()
    (aid, e), (_, e2) = f.ordered()
    data = bytearray(f.data_path.read_bytes())
    data[e.offset + 5] ^= 0xFF                               # the first window's archive no longer matches the torrent
    f.data_path.write_bytes(bytes(data))
    before = o.stored()
    o.clock.set(base + 5 * WEEK)
    with caplog.at_level(logging.INFO, logger="core.node.control"):
        deleted = node.apply_retention()
    kept = o.stored()
    assert 0 < deleted == len(before) - len(kept)
    assert [r.getMessage() for r in caplog.records] == [
        f"{o.cid}: keeping the {len(kept)} messages of [{e.start}, {e.end}): an archive of that window cannot be "
        f"proven (piece {e.offset // PIECE_LENGTH} of archive {aid} does not match the torrent)",
        f"{o.cid}: retention deleted {deleted} archived messages older than {min(base + 4 * WEEK, e2.end)}"]


def test_restart_after_every_message_was_deleted(tmp_path):
    """The start-up check for late rows of earlier windows (oldest row to the last archive's end) with no row at
    all: nothing to compare, nothing late."""
    o, node, base = archived(tmp_path, 20, 1)
    con = sqlite3.connect(o.paths.messages_db)
    with con:
        con.execute("DELETE FROM waku_messages")
    con.close()
    node = o.open()
    node.start()
    assert node.late_messages == 0 and node.broken is None and o.stored() == set()


def test_codex_retention_of_an_encrypted_community_is_proven_here_with_its_keys(tmp_path):
    """Codex: the windows come from the owner's local copies (opened with the community's keys), and the proof runs
    in this process even with an offloader (the worker's proof reads a torrent). A local Codex test node."""
    from tests.support.codex_node import CodexTestNode
    codex = CodexTestNode(tmp_path / "codex").start()
    try:
        off = Inline()
        o, node, base = encrypted_archived(tmp_path, 51, off, backend="codex", codex_api=codex.url)
        assert len(node.codex_owner().entries) == 2
        o.clock.set(base + 5 * WEEK)
        assert node.apply_retention() == 40 and "torrent_window_ids" not in off.jobs
        assert o.stored() == set()
    finally:
        codex.stop()


def test_known_late_rows_do_not_hide_the_archived_rows_beside_them(tmp_path):
    """Retention skips a range only when all its rows are known late or unproven: one late row beside one archived
    row (and one at the very start of the next window) still lets the archived rows go."""
    o = owner(tmp_path)
    node = o.open(retention=WEEK)
    first = list(o.gen.messages(1, start=T0, span=1))
    o.store(first)
    base = o.oldest()
    o.store(o.gen.messages(1, start=base + WEEK + 10, span=1))
    o.clock.set(base + 2 * WEEK + HOUR)
    node.start()
    assert len(o.folder().entries) == 2
    late = list(o.gen.messages(1, start=base + 50, span=1)) + list(o.gen.messages(1, start=base + WEEK, span=1))
    assert o.store(late) == 2 and node.late_windows() == {(base, base + WEEK): 1, (base + WEEK, base + 2 * WEEK): 1}
    assert min(m.timestamp_ns for m in late[1:]) // 10 ** 9 == base + WEEK
    o.clock.set(base + 5 * WEEK)
    assert node.apply_retention() == 2 and o.stored() == {m.hash for m in late}


def test_unproven_rows_do_not_hide_the_provable_ones(tmp_path):
    """The rows of an archive that cannot be proven are kept and remembered; they count once, so the next
    retention still deletes the rows of the other window that have since grown old enough."""
    o = owner(tmp_path)
    node = o.open(retention=WEEK)
    o.store(o.gen.messages(30, start=T0, span=WEEK - 100))
    base = o.oldest()
    o.store(o.gen.messages(10, start=base + WEEK, span=WEEK - 100))
    o.clock.set(base + 2 * WEEK + HOUR)
    node.start()
    f = o.folder()
    (aid, e), (_, e2) = f.ordered()
    data = bytearray(f.data_path.read_bytes())
    data[e.offset + 5] ^= 0xFF                               # the first window's archive no longer matches the torrent
    f.data_path.write_bytes(bytes(data))
    assert node.apply_retention() == 0                      # the first window: kept, unproven; the second: too young
    assert node._kept_in(base, base + WEEK) == 30
    o.clock.set(base + 5 * WEEK)
    assert node.apply_retention() == 10 and len(o.stored()) == 30


def test_an_unproven_row_at_the_next_window_start_is_not_counted_in_the_window_before(tmp_path):
    o = owner(tmp_path)
    node = o.open(retention=WEEK)
    o.store(o.gen.messages(1, start=T0, span=1))
    base = o.oldest()
    o.store(o.gen.messages(1, start=base + WEEK, span=1))     # the second window's first row, at its very start
    o.clock.set(base + 2 * WEEK + HOUR)
    node.start()
    f = o.folder()
    (_, e), (_, e2) = f.ordered()
    data = bytearray(f.data_path.read_bytes())
    data[e2.offset + 5] ^= 0xFF                              # the second window's archive cannot be proven
    f.data_path.write_bytes(bytes(data))
    assert o.store(list(o.gen.messages(2, start=base + WEEK, span=1))[1:]) == 1      # a late row, same second
    assert node._kept_in(base, base + WEEK) == 0 and node._kept_in(base + WEEK, base + 2 * WEEK) == 2
    o.clock.set(base + 5 * WEEK)
    assert node.apply_retention() == 1 and len(o.stored()) == 2     # the first window's row went


def test_a_torrent_named_for_another_community_proves_nothing(tmp_path):
    from core.archive.torrent import build_metainfo
    o, node, base = archived(tmp_path, 20, 1, retention=WEEK)
    other = "0x02" + "ab" * 32
    (o.paths.torrent_dir / f"{o.cid}.torrent").write_bytes(build_metainfo(o.paths.archive_dir / o.cid, other))
    o.clock.set(base + 5 * WEEK)
    before = o.stored()
    assert node.apply_retention() == 0 and o.stored() == before


def test_a_row_at_the_last_archive_end_is_in_the_open_window_not_late(tmp_path):
    o, node, base = archived(tmp_path, 20, 1)
    end = base + WEEK
    assert o.store(o.gen.messages(1, start=end, span=1)) == 1          # the open window's first second
    assert node.late_messages == 0
    assert o.store(o.gen.messages(1, start=end - 1, span=1)) == 1      # the archived window's last second: late
    assert node.late_windows() == {(base, end): 1}


def test_a_store_catch_up_is_decoded_in_the_worker(tmp_path):
    from core.node.jobs import OFFLOAD_BATCH
    off = Inline()
    o = owner(tmp_path)
    o.open(offload=off)
    msgs = list(o.gen.messages(OFFLOAD_BATCH, start=T0, span=WEEK))
    assert o.store(msgs[:-1]) == OFFLOAD_BATCH - 1 and off.jobs == []          # fewer: decoded here
    assert o.store(msgs) == 1 and off.jobs == ["decode_received"]              # a batch of 200: in the worker
    assert o.stored() == {m.hash for m in msgs}


def test_after_retention_the_schedule_still_starts_at_the_last_archive(tmp_path):
    o, node, base = archived(tmp_path, 30, 2, retention=WEEK)
    o.clock.set(base + 2 * WEEK + 12 * HOUR)
    assert node.apply_retention() > 0 and o.oldest() > base + WEEK      # the oldest row is now mid-window
    node = o.open(retention=WEEK)                                       # a restart: no schedule in memory
    assert node.next_archive_due() == base + 3 * WEEK + HOUR
    o.clock.set(base + 3 * WEEK + HOUR)
    assert node.whole_windows_end() == base + 3 * WEEK


def test_no_retention_without_an_archive_or_on_a_stopped_folder(tmp_path):
    o = owner(tmp_path)
    node = o.open(retention=WEEK)
    o.store(o.gen.messages(20, start=T0, span=WEEK))
    o.clock.set(T0 + 10 * WEEK)
    assert node.apply_retention() == 0                     # nothing archived: nothing can be proven
    o, node, base = archived(tmp_path / "b", 30, 2, retention=WEEK)
    node.broken = "index-past-data: x"
    o.clock.set(base + 5 * WEEK)
    before = o.stored()
    assert node.apply_retention() == 0 and o.stored() == before
    late = list(o.gen.messages(1, start=base + 50, span=1))
    assert o.store(late) == 1 and node.late_messages == 0  # a stopped folder's archives are not read to classify it
