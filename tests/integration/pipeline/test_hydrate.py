"""Hydrate on Spark: downloaded data + index -> member history DB, with the one importer's rules (whole windows,
one transaction per window, never delete; core/history_import.py)."""
from __future__ import annotations


import pytest

from core.archive.build import build_archives
from core.archive.folder import ArchiveFolder
from core.pipeline.hydrate import HydrateError, InjectedFault, submit_hydrate
from core.status.unwrap import Unwrapped
from core.storage import history

from .helpers import COMMUNITY, T0, TOPICS, WEEK, history_tables, msg, write_store

pytestmark = pytest.mark.spark
OTHER_COMMUNITY = "0x03" + "cd" * 32


@pytest.fixture
def built(tmp_path):
    """Three weeks of messages; week 1 split into two chunks (large payloads)."""
    ms = [msg(T0 + i * 600, bytes([i % 256]) * 300, TOPICS[i % 2]) for i in range(200)]
    ms += [msg(T0 + WEEK + i, bytes([i]) * 1_000_000, TOPICS[0]) for i in range(40)]
    ms += [msg(T0 + 2 * WEEK + i * 7, bytes([i % 256]) * 50, TOPICS[1]) for i in range(300)]
    db = write_store(tmp_path / "db.sqlite", ms)
    res = build_archives(db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t", end=T0 + 3 * WEEK)
    folder = ArchiveFolder(tmp_path / "d" / COMMUNITY)
    assert len(folder.entries) == 4
    return folder, res, ms


def stale_row(ts, tag, community=COMMUNITY):
    return (community, bytes([tag]) * 32, ts, TOPICS[0], None, None, None, None, None, None, b"old", None)


def test_hydrate_all_keeps_local_messages_and_is_idempotent(spark_owner, tmp_path, built):
    folder, res, ms = built
    db = tmp_path / "member.sqlite"
    con = history.connect(db)
    history.bulk_insert(con, [stale_row(T0 + 5, 1),                      # inside week 0, in no archive: kept
                              stale_row(T0 + WEEK + 3, 2),               # inside week 1 (chunked): kept
                              stale_row(T0 + 3 * WEEK + 1, 3),           # after every archive: kept
                              stale_row(T0 + 5, 4, OTHER_COMMUNITY),     # other community: kept
                              (COMMUNITY, ms[0].hash, ms[0].timestamp, TOPICS[0], None, None, None, None, None,
                               "edited locally", b"old", None)])         # the archive's copy replaces it
    con.close()
    r = submit_hydrate(spark_owner, folder.path, COMMUNITY, db).result(300)
    assert r.messages == len(ms) and r.windows == 3 and sorted(r.imported_archive_ids) == sorted(folder.entries)
    con = history.connect(db)
    rows = history.messages(con, COMMUNITY)
    assert {row[1] for row in rows} == {m.hash for m in ms} | {bytes([t]) * 32 for t in (1, 2, 3)}
    assert history.imported_archive_ids(con, COMMUNITY) == set(folder.entries)
    assert history.archive_info(con, COMMUNITY).last_message_archive_end_date == T0 + 3 * WEEK
    assert len(history.messages(con, OTHER_COMMUNITY)) == 1
    by_hash = {row[1]: row for row in rows}
    m = ms[0]
    assert by_hash[m.hash][2:5] == (m.timestamp, m.topic, m.sig) and by_hash[m.hash][10] == m.payload
    con.close()
    first = history_tables(db)
    again = submit_hydrate(spark_owner, folder.path, COMMUNITY, db).result(300)
    assert again.imported_archive_ids == [] and history_tables(db) == first        # only what is missing: nothing


def test_one_chunk_chosen_imports_its_whole_window(spark_owner, tmp_path, built):
    folder, res, ms = built
    week1 = [a for a, e in folder.ordered() if e.start == T0 + WEEK]
    assert len(week1) == 2
    db = tmp_path / "member.sqlite"
    con = history.connect(db)
    history.bulk_insert(con, [stale_row(T0 + WEEK + 3, 2)])
    con.close()
    r = submit_hydrate(spark_owner, folder.path, COMMUNITY, db, archive_ids=week1[:1]).result(300)
    assert r.imported_archive_ids == week1 and r.messages == 40 and r.windows == 1
    con = history.connect(db)
    hashes = {row[1] for row in history.messages(con, COMMUNITY)}
    assert bytes([2]) * 32 in hashes          # never deleted: no archive holds it
    con.close()


def test_latest_then_all_on_spark_loses_nothing(spark_owner, tmp_path, built):
    from core.torrent.selection import Selection
    folder, res, ms = built
    db = tmp_path / "member.sqlite"
    r = submit_hydrate(spark_owner, folder.path, COMMUNITY, db, selection=Selection("latest")).result(300)
    assert r.windows == 1 and r.messages == 300
    r = submit_hydrate(spark_owner, folder.path, COMMUNITY, db, selection=Selection("all")).result(300)
    assert r.windows == 2 and r.messages == 240
    con = history.connect(db)
    assert sorted(row[1] for row in history.messages(con, COMMUNITY)) == sorted(m.hash for m in ms)
    con.close()


def test_encrypted_archives_open_on_spark(spark_owner, tmp_path):
    import functools
    from core.status.archive_encryption import (GroupKeyStore, index_codec, open_archive_bytes, open_index_bytes,
                                                parse_cli_key, HashRatchetEncryptor)
    ms = [msg(T0 + i * 600, bytes([i % 256]) * 300, TOPICS[i % 2]) for i in range(100)]
    db = write_store(tmp_path / "db.sqlite", ms)
    store = GroupKeyStore()
    key = parse_cli_key("ab" * 32, COMMUNITY)
    store.add(key)
    build_archives(db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t", end=T0 + WEEK,
                   transform=HashRatchetEncryptor(store, key.group_id), index_codec=index_codec(store, key.group_id))
    folder = tmp_path / "d" / COMMUNITY
    r = submit_hydrate(spark_owner, folder, COMMUNITY, tmp_path / "m.sqlite",
                       open_archive=functools.partial(open_archive_bytes, store=store),
                       open_index=functools.partial(open_index_bytes, store=store)).result(300)
    assert r.messages == 100
    con = history.connect(tmp_path / "m.sqlite")
    assert sorted(row[1] for row in history.messages(con, COMMUNITY)) == sorted(m.hash for m in ms)
    con.close()


def test_interrupted_window_keeps_old_range(spark_owner, tmp_path, built):
    folder, res, ms = built
    db = tmp_path / "member.sqlite"
    con = history.connect(db)
    history.bulk_insert(con, [stale_row(T0 + 5, 1), stale_row(T0 + WEEK + 3, 2)])
    con.close()
    with pytest.raises(InjectedFault):
        submit_hydrate(spark_owner, folder.path, COMMUNITY, db, fault_after_windows=1).result(300)
    con = history.connect(db)
    rows = history.messages(con, COMMUNITY)
    week0 = [r for r in rows if r[2] < T0 + WEEK]
    week1 = [r for r in rows if T0 + WEEK <= r[2] < T0 + 2 * WEEK]
    assert len(week0) == 201 and bytes([1]) * 32 in {r[1] for r in week0}       # imported, local copy kept
    assert [r[1] for r in week1] == [bytes([2]) * 32]                            # rolled back: untouched
    imported = history.imported_archive_ids(con, COMMUNITY)
    assert imported == {a for a, e in folder.entries.items() if e.start == T0}
    con.close()
    # Resuming finishes the job.
    submit_hydrate(spark_owner, folder.path, COMMUNITY, db).result(300)
    con = history.connect(db)
    assert len(history.messages(con, COMMUNITY)) == len(ms) + 2
    con.close()


def test_corrupt_archive_is_named_and_others_still_import(spark_owner, tmp_path, built):
    folder, res, ms = built
    ordered = folder.ordered()
    bad_id, bad = ordered[-1]                # week 2
    with open(folder.data_path, "r+b") as f:
        f.seek(bad.offset)
        f.write(b"\xff" * 16)
    db = tmp_path / "member.sqlite"
    with pytest.raises(HydrateError) as ei:
        submit_hydrate(spark_owner, folder.path, COMMUNITY, db).result(300)
    assert ei.value.archive_id == bad_id and bad_id in str(ei.value)
    assert set(ei.value.result.imported_archive_ids) == {a for a, _ in ordered[:-1]}
    con = history.connect(db)
    assert all(r[2] < T0 + 2 * WEEK for r in history.messages(con, COMMUNITY))
    con.close()


def test_bad_padding_and_unknown_id_rejected(spark_owner, tmp_path, built):
    folder, res, ms = built
    aid, e = folder.ordered()[0]
    with open(folder.data_path, "r+b") as f:
        f.seek(e.offset + e.size - 1)
        f.write(b"\x01")
    with pytest.raises(HydrateError) as ei:
        submit_hydrate(spark_owner, folder.path, COMMUNITY, tmp_path / "m.sqlite", archive_ids=[aid]).result(300)
    assert ei.value.archive_id == aid and "padding" in str(ei.value)
    with pytest.raises(HydrateError) as ei:
        submit_hydrate(spark_owner, folder.path, COMMUNITY, tmp_path / "m.sqlite",
                       archive_ids=["0x" + "00" * 32]).result(300)
    assert ei.value.code == "unknown-archive"


def tag_unwrap(payload: bytes):
    return Unwrapped(chat_id="chat-" + payload[:1].hex(), clock=len(payload), message_type=1, text=None) \
        if payload[:1] == b"\x00" else None


def test_pluggable_unwrap_runs_in_executors(spark_owner, tmp_path, built):
    folder, res, ms = built
    db = tmp_path / "member.sqlite"
    submit_hydrate(spark_owner, folder.path, COMMUNITY, db, unwrap=tag_unwrap).result(300)
    con = history.connect(db)
    rows = history.messages(con, COMMUNITY)
    tagged = [r for r in rows if r[5] is not None]
    assert tagged and all(r[5] == "chat-00" and r[6] == len(r[10]) and r[8] == 1 for r in tagged)
    assert len(tagged) == sum(1 for m in ms if m.payload[:1] == b"\x00")
    con.close()


def test_real_status_traffic_is_unwrapped(spark_owner, tmp_path):
    """Signed, payload-v1 Status chat messages (core.status.traffic) come out as chat rows: text, chat ID, clock,
    author."""
    from core.status.traffic import TrafficGenerator, write_store as write_traffic
    gen = TrafficGenerator(seed=9, channels=2, authors=4)
    sent = list(gen.messages(120, start=T0, span=2 * WEEK))
    store = write_traffic(tmp_path / "db.sqlite", 120, generator=TrafficGenerator(seed=9, channels=2, authors=4),
                          start=T0, span=2 * WEEK)
    topics = [bytes.fromhex(t[2:]) for t in store.topics]
    build_archives(store.path, store.community_id, topics, tmp_path / "d", tmp_path / "t", end=T0 + 2 * WEEK)
    db = tmp_path / "member.sqlite"
    r = submit_hydrate(spark_owner, tmp_path / "d" / store.community_id, store.community_id, db).result(300)
    assert r.messages == 120
    con = history.connect(db)
    rows = history.messages(con, store.community_id)
    con.close()
    got = sorted((row[5], row[6], row[9], row[4]) for row in rows)
    want = sorted((m.chat_id, m.clock, m.text, m.author) for m in sent)
    assert got == want and all(row[8] == 1 for row in rows)  # type 1 = CHAT_MESSAGE
