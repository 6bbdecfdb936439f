"""Retention deletes a message only when it is provably archived: its hash, timestamp, topic and content digest
match a message decoded from an archive whose bytes are in `data`, hash to the seeded torrent's pieces and pass the
index check. Everything else is kept, and late messages (for a window already archived) are counted and reported.
Fake clock, real files."""
from __future__ import annotations

import logging
import sqlite3

from core.archive import codec
from core.archive.folder import atomic_write

from .support import LATE_EVENT, T0, WEEK, owner

DAY = 24 * 3600


def _ts(m) -> int:
    return m.timestamp_ns // 10 ** 9


def _built(tmp_path, n=300, weeks=3, seed=11, **kw):
    o = owner(tmp_path, seed=seed)
    node = o.open(**kw)
    msgs = list(o.gen.messages(n, start=T0, span=weeks * WEEK))
    o.store(msgs)
    o.clock.set(o.oldest() + weeks * WEEK + 2 * 3600)      # every message is in a whole window
    node.start()
    return o, node, msgs


def test_late_message_for_archived_window_is_kept_and_reported(tmp_path):
    o, node, hist = _built(tmp_path)
    f = o.folder()
    archived = o.archived()
    assert archived and f.last_end > min(_ts(m) for m in hist) + WEEK
    late = list(o.gen.messages(1, start=min(e.start for e in f.entries.values()) + WEEK + 100, span=1))[0]
    assert _ts(late) < f.last_end
    assert o.store([late]) == 1                    # a relay peer hands over a message of the second week, now
    o.clock.advance(40 * DAY)                      # every archived message is now past the 30-day retention
    node.tick()
    stored = o.stored()
    assert late.hash in stored, "a message that is in no archive must never be deleted"
    assert not {m.hash for m in hist if m.hash in archived} & stored, "archived messages past retention go"
    assert getattr(node, "late_messages", None) == 1
    ev = [e for e in o.events if e.name == LATE_EVENT]
    assert len(ev) == 1 and ev[0].data["count"] == 1 and ev[0].data["total"] == 1
    w = next(e for e in f.entries.values() if e.start <= _ts(late) < e.end)
    assert ev[0].data["windows"] == [[w.start, w.end, 1]]
    # the count survives a restart (it is derived from the files, not remembered)
    o.events.clear()
    node = o.open()
    node.start()
    assert node.late_messages == 1 and [e.data["total"] for e in o.events if e.name == LATE_EVENT] == [1]


def test_retention_deletes_only_archived_messages_older_than_retention(tmp_path):
    o, node, msgs = _built(tmp_path, weeks=6, n=600)
    archived = o.archived()
    now = int(o.clock.now())
    cutoff = now - 30 * DAY
    unarchived = [m for m in msgs if m.hash not in archived]
    dropped = node.apply_retention()
    stored = o.stored()
    assert dropped == sum(1 for m in msgs if m.hash in archived and _ts(m) < cutoff) > 0
    assert stored == {m.hash for m in msgs if m.hash not in archived or _ts(m) >= cutoff}
    assert all(m.hash in stored for m in unarchived)
    assert node.apply_retention() == 0             # nothing more to do, and nothing decoded again


def _corrupt_one_archive(o, where: str) -> tuple[int, int]:
    f = o.folder()
    aid, e = f.ordered()[0]
    with open(f.data_path, "r+b") as fh:
        if where == "padding":
            assert e.padding > 0
            fh.seek(e.offset + e.size - 1)
            fh.write(b"\x01")
        else:
            fh.seek(e.offset + e.raw_size // 2)
            b = fh.read(1)
            fh.seek(e.offset + e.raw_size // 2)
            fh.write(bytes([b[0] ^ 0xFF]))
    return e.start, e.end


def test_archive_with_nonzero_padding_or_damaged_bytes_keeps_its_window(tmp_path, caplog):
    for i, where in enumerate(("padding", "payload")):
        o, node, msgs = _built(tmp_path / where, seed=20 + i)
        lo, hi = _corrupt_one_archive(o, where)
        o.clock.advance(40 * DAY)
        with caplog.at_level(logging.WARNING):
            node.apply_retention()
        stored = o.stored()
        assert {m.hash for m in msgs if lo <= _ts(m) < hi} <= stored, where
        assert not {m.hash for m in msgs if _ts(m) >= hi} & stored, where      # the good windows still go
        assert "cannot be proven" in caplog.text


def test_index_failing_its_check_deletes_nothing(tmp_path, caplog):
    o, node, msgs = _built(tmp_path)
    f = o.folder()
    entries = dict(f.entries)
    aid = next(iter(entries))
    entries["0x" + "00" * 32] = entries.pop(aid)       # a key that is not the Keccak of its entry
    atomic_write(f.index_path, codec.encode_index(entries))
    before = o.stored()
    o.clock.advance(40 * DAY)
    with caplog.at_level(logging.WARNING):
        assert node.apply_retention() == 0
    assert o.stored() == before
    assert "key-mismatch" in caplog.text or "keeping every message" in caplog.text


def test_row_changed_behind_our_back_is_not_deleted(tmp_path):
    """Same hash, different content: not the archived message, so retention keeps it."""
    o, node, msgs = _built(tmp_path)
    victim = msgs[3]
    con = sqlite3.connect(o.paths.messages_db)
    con.execute("UPDATE waku_messages SET payload = CAST(payload || X'00' AS BLOB) WHERE hash = ?",
                ("0x" + victim.hash.hex(),))
    con.commit()
    con.close()
    o.clock.advance(40 * DAY)
    node.apply_retention()
    assert o.stored() == {victim.hash}


def test_encrypted_community_retention_opens_archives_with_the_community_key(tmp_path):
    import os
    from core.status.archive_encryption import GroupKey, GroupKeyStore
    from core.status.identity import community_id_bytes
    o = owner(tmp_path, seed=31)
    o.cfg.encrypted = True
    keys = GroupKeyStore(tmp_path / "keys.json")
    keys.add(GroupKey(community_id_bytes(o.cid), os.urandom(32), 1_700_000_000_000))
    node = o.open(group_keys=keys)
    msgs = list(o.gen.messages(200, start=T0, span=3 * WEEK))
    o.store(msgs)
    o.clock.set(o.oldest() + 3 * WEEK + 2 * 3600)
    node.start()
    o.clock.advance(40 * DAY)
    # without the key nothing can be proven: nothing is deleted
    blind = o.open(group_keys=GroupKeyStore())
    assert blind.apply_retention() == 0 and len(o.stored()) == len(msgs)
    node = o.open(group_keys=keys)
    assert node.apply_retention() == len(msgs)
    assert o.stored() == set()


def test_refusal_is_logged_once_not_on_every_tick(tmp_path, caplog):
    o, node, msgs = _built(tmp_path)
    (o.paths.torrent_dir / f"{o.cid}.torrent").unlink()       # the seeded torrent is gone: nothing can be proven
    o.clock.advance(40 * DAY)
    with caplog.at_level(logging.WARNING):
        for _ in range(5):                                      # the engine's timer calls it every second
            assert node.apply_retention() == 0
            o.clock.advance(1)
    assert caplog.text.count("keeping every message") == 1
    assert len(o.stored()) == len(msgs)
