"""Authors filled in after the rows (core/status/unwrap.py: preview_unwrap; core/history_import.py:
read_window_preview, finish_authors; core/storage/history.py: the pending table). Real signed Status messages, a real history database: whatever the
payload, a row written first without its author and then finished is exactly `history_row`'s row."""
from __future__ import annotations

import hashlib
import sqlite3

import pytest
from coincurve import PrivateKey

from core.archive.codec import ArchiveMessage
from core.history_import import RowPool, finish_authors, history_row, row_of
from core.status.unwrap import preview_unwrap
from core.pb import status_application_metadata_pb2 as app_pb
from core.pb import status_protocol_message_pb2 as proto_pb
from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
from core.status.chat_message import encode_chat_message
from core.storage import history as H
from core.storage.member_history import MemberHistory

CID = "0x02" + "ef" * 32
TOPIC = b"\x01\x02\x03\x04"
T = 1_700_000_000
AUTHORS = [PrivateKey(hashlib.sha256(b"author %d" % i).digest()) for i in range(5)]


def _chat(i: int) -> bytes:
    return encode_chat_message(f"message {i}", "chat-%d" % (i % 3), i + 1, (T + i) * 1000)


def payload_kinds(i: int) -> bytes:
    """Every kind of payload an archive can hold, by i % 8."""
    kind, key = i % 8, AUTHORS[i % len(AUTHORS)]
    if kind == 0:
        return b"not a status message %d" % i                                        # raw
    if kind == 1:
        return wrap_public(wrap_application(_chat(i), CHAT_MESSAGE, None), "inst")   # unsigned
    if kind == 2:
        return wrap_public(wrap_application(b"\x08\x01", 7, key), "inst")             # signed, another type
    if kind == 3:                                                   # a signature no key can be recovered from
        app = app_pb.ApplicationMetadataMessage(payload=_chat(i), type=CHAT_MESSAGE, signature=b"\0" * 65)
        return wrap_public(app.SerializeToString(), "inst")
    if kind == 4:
        return wrap_public(wrap_application(b"\xff\xff\xff", CHAT_MESSAGE, key), "inst")   # chat undecodable
    if kind == 5:                                                                     # encrypted ProtocolMessage
        pm = proto_pb.ProtocolMessage(installation_id="i")
        pm.encrypted_message["none"].payload = b"x" * 40
        return pm.SerializeToString()
    return wrap_public(wrap_application(_chat(i), CHAT_MESSAGE, key), "inst")         # signed chat (6, 7)


def messages(n: int) -> list[ArchiveMessage]:
    return [ArchiveMessage(b"envelope-sig" if i % 3 == 0 else b"", T + i, TOPIC, payload_kinds(i),
                           hash=hashlib.sha256(b"%d" % i).digest()) for i in range(n)]


def preview_rows(ms):
    rows, pending = [], []
    for m in ms:
        u, signed = preview_unwrap(m.payload)
        rows.append(row_of(CID, m, "0xa", u))
        if signed:
            pending.append(rows[-1][1])
    return rows, pending


def test_preview_is_status_unwrap_without_the_author_and_says_when_one_is_pending():
    ms = messages(16)
    for m in ms:
        u, signed = preview_unwrap(m.payload)
        full = history_row(CID, m, "0xa")
        kind = (m.timestamp - T) % 8
        assert signed == (kind in (2, 3, 4, 6, 7)), kind
        if not signed:                                        # nothing to recover: already the final row
            assert row_of(CID, m, "0xa", u) == full
        else:                                                 # everything but the author (a bad one: raw at the end)
            assert u.author is None
            if kind != 3:
                assert row_of(CID, m, "0xa", u)[5:] == full[5:]
    assert history_row(CID, ms[3], "0xa")[5:10] == (None,) * 5      # the bad signature really opens as raw


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_written_first_and_finished_later_are_the_reference_rows(tmp_path, workers):
    ms = messages(240)
    rows, pending = preview_rows(ms)
    h = MemberHistory(tmp_path / "h.sqlite")
    h.import_window(CID, T, T + 1000, rows, ["0xa"], pending)
    assert h.pending_author_count(CID) == len(pending) == 150
    page = h.messages(CID, limit=10 ** 6)
    shown = {r["id"]: r["author"] for r in page}
    first_pending = "0x" + pending[0].hex()
    waiting = {r["id"] for r in page if r["author_pending"]}                   # what History says
    assert waiting == {"0x" + p.hex() for p in pending} and "0x" + rows[0][1].hex() not in waiting
    assert shown[first_pending] in ("", "0x" + b"envelope-sig".hex())          # no author yet
    pool = RowPool(workers=workers)
    pool.MIN_MESSAGES, pool.CHUNK = 20, 16
    seen = []
    try:
        done = finish_authors(h, CID, lambda d, t: seen.append((d, t)), batch=64, pool=pool)
        assert (pool._pool is not None and not pool.broken) == (workers == 2)        # the workers did it
    finally:
        pool.shutdown()
    assert done == 150 and seen == [(0, 150), (64, 150), (128, 150), (150, 150)]
    con = sqlite3.connect(tmp_path / "h.sqlite")
    assert H.messages(con, CID) == sorted((history_row(CID, m, "0xa") for m in ms), key=lambda r: (r[2], r[1]))
    con.close()
    assert h.pending_author_count(CID) == 0
    assert not any(r["author_pending"] for r in h.messages(CID, limit=10 ** 6))
    assert finish_authors(h, CID) == 0                       # nothing left: a second run does nothing
    h.close()


def test_the_search_finds_authors_filled_in_after_it_indexed_the_rows(tmp_path):
    """Rows the history search indexed before their author was known move to a new rowid when it is filled in, so
    its catch-up indexes the author; rows it had not reached are updated in place and indexed later, whole."""
    from core.status.history_search import HistorySearch, has_fts5
    if not has_fts5():
        pytest.skip("this SQLite has no FTS5")
    ms = messages(48)
    (rows1, pending1), (rows2, pending2) = preview_rows(ms[:24]), preview_rows(ms[24:])
    h = MemberHistory(tmp_path / "h.sqlite")
    h.import_window(CID, T, T + 24, rows1, ["0xa"], pending1)
    search = HistorySearch(tmp_path / "h.sqlite")
    key = AUTHORS[1].public_key.format(compressed=False)
    signed_by = {"0x" + m.hash.hex() for m in ms if history_row(CID, m, "0xa")[4] == key}
    assert search.search(CID, key.hex()) == []                    # the first window indexed, without authors
    h.import_window(CID, T + 24, T + 48, rows2, ["0xb"], pending2)     # the second one not indexed yet
    top = h._con.execute("SELECT MAX(rowid) FROM history_messages").fetchone()[0]
    finish_authors(h, CID)
    moved = {r for (r,) in h._con.execute("SELECT rowid FROM history_messages WHERE rowid > ?", (top,))}
    assert len(moved) == len(pending1)                            # the indexed ones moved, the others did not
    found = {r["id"] for r in search.search(CID, key.hex())}
    assert found == signed_by
    assert {"0x" + m.hash.hex() for m in ms[:24]} & found and {"0x" + m.hash.hex() for m in ms[24:]} & found
    search.close()
    h.close()


def test_a_pending_entry_whose_row_is_gone_or_another_is_only_cleared(tmp_path):
    ms = messages(16)
    rows, pending = preview_rows(ms)
    h = MemberHistory(tmp_path / "h.sqlite")
    h.import_window(CID, T, T + 100, rows, ["0xa"], pending)
    con = sqlite3.connect(tmp_path / "h.sqlite")
    with con:             # an entry for a rowid with no row, and one whose rowid now holds another message
        con.execute("INSERT INTO history_authors_pending (rid, hash) VALUES (999, ?)", (b"\x07" * 32,))
        con.execute("UPDATE history_authors_pending SET hash = ? WHERE rid = (SELECT MIN(rid) FROM "
                    "history_authors_pending)", (b"\x08" * 32,))
    con.close()
    assert h.pending_author_count(CID) == len(pending) + 1
    assert finish_authors(h, CID) == len(pending) + 1
    assert h.pending_author_count(CID) == 0 and h.count(CID) == 16         # nothing was made up
    got = {r["id"]: r["author"] for r in h.messages(CID, limit=100)}
    first = "0x" + pending[0].hex()              # its entry was taken from it: left as written, not changed
    assert got[first] in ("", "0x" + b"envelope-sig".hex())
    final = {"0x" + m.hash.hex(): history_row(CID, m, "0xa")[4] for m in ms}
    assert {i: a for i, a in got.items() if i != first} == {i: "0x" + a.hex() if a else "" for i, a in final.items()
                                                           if i != first}          # the rest as history_row says
    h.close()


def test_the_pending_count_is_per_community_with_another_community_in_the_history(tmp_path):
    """pending_author_count counts the pending table alone when every row is this community's (no row read per
    entry); with another community's rows beside it, each community counts only its own (and entries whose row
    is gone), and its authors pass fills only its own rows."""
    other = "0x03" + "ef" * 32
    ms = messages(24)
    rows, pending = preview_rows(ms)
    h = MemberHistory(tmp_path / "h.sqlite")
    h.import_window(CID, T, T + 100, rows, ["0xa"], pending)
    assert h.pending_author_count(CID) == len(pending) and h.pending_author_count(other) == 0
    theirs = [(other, *r[1:]) for r in rows[:16]]          # the same messages in another community: other rows
    their_pending = [p for p in pending if p in {r[1] for r in theirs}]
    h.import_window(other, T, T + 100, theirs, ["0xb"], their_pending)
    con = sqlite3.connect(tmp_path / "h.sqlite")
    with con:             # an entry whose row is gone counts for both (either pass clears it)
        con.execute("INSERT INTO history_authors_pending (rid, hash) VALUES (999, ?)", (b"\x07" * 32,))
    con.close()
    assert h.pending_author_count(CID) == len(pending) + 1
    assert h.pending_author_count(other) == len(their_pending) + 1
    assert h.pending_author_count("0x02" + "00" * 32) == 1          # no row of its own: the gone entry only
    assert finish_authors(h, CID) == len(pending) + 1
    assert h.pending_author_count(CID) == 0 and h.pending_author_count(other) == len(their_pending)
    h.close()


def test_a_history_database_made_before_the_pending_table_opens_and_imports_without_loss(tmp_path):
    def tables():
        con = sqlite3.connect(tmp_path / "h.sqlite")
        try:
            return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    ms = messages(40)
    old_rows = [history_row(CID, m, "0xold") for m in ms[:20]]
    con = sqlite3.connect(tmp_path / "h.sqlite")
    con.executescript(H.SCHEMA)                                  # the schema before authors could wait
    con.executemany(H._INSERT, old_rows)
    con.commit()
    con.close()
    before = tables()
    h = MemberHistory(tmp_path / "h.sqlite")                     # opened by this version: nothing added
    assert tables() == before and "history_authors_pending" not in before
    assert h.pending_author_count(CID) == 0 and h.pending_authors(CID, 5) == [] and finish_authors(h, CID) == 0
    assert not any(r["author_pending"] for r in h.messages(CID, limit=10 ** 6))
    rows, pending = preview_rows(ms[20:])
    h.import_window(CID, T, T + 100, rows, ["0xnew"], pending)
    assert tables() == before | {"history_authors_pending"}     # made by the first import that defers authors
    assert finish_authors(h, CID) == len(pending)
    h.close()
    con = sqlite3.connect(tmp_path / "h.sqlite")
    want = old_rows + [history_row(CID, m, "0xa") for m in ms[20:]]
    want = [r[:11] + (("0xold",) if i < 20 else ("0xa",)) for i, r in enumerate(want)]
    got = H.messages(con, CID)
    con.close()
    assert [r[:11] for r in got] == [r[:11] for r in want]
    assert [r[11] for r in got] == ["0xold"] * 20 + ["0xa"] * 20


def test_the_first_pass_decoder_gives_preview_unwraps_rows_in_process_and_in_a_worker():
    """preview_archives (and preview_opened under it), what the import's first pass runs, against preview_unwrap +
    row_of on every kind of payload, a message without a hash (keyed by its encoding) and two archives."""
    from core.archive.codec import encode_archive
    from core.archive.errors import ArchiveError
    from core.history_import import preview_archives
    from core.status.unwrap import preview_opened
    ms = messages(64)
    ms[5] = ArchiveMessage(b"", ms[5].timestamp, TOPIC, ms[5].payload)            # no hash
    for m in ms:
        u, signed = preview_unwrap(m.payload)
        assert preview_opened(m.payload, m.sig) == (row_of(CID, m, "0xa", u)[4:10], signed)
    archives = [("0xa", encode_archive(T, T + 32, [TOPIC], ms[:32]), T, T + 32),
                ("0xb", encode_archive(T, T + 32, [TOPIC], ms[32:]), T, T + 32)]
    rows_a, pending_a = preview_rows(ms[:32])
    rows_b, pending_b = preview_rows(ms[32:])
    want = (rows_a + [r[:11] + ("0xb",) for r in rows_b], pending_a + pending_b)
    assert preview_archives(CID, archives) == want
    assert len(want[0][5][1]) == 32                                             # keyed by its encoding
    pool = RowPool(workers=2)
    pool.PREVIEW_MIN_BYTES = 1
    try:
        assert pool.preview(CID, archives) == want
        assert pool._pool is not None and not pool.broken                     # a worker did it
        with pytest.raises(ArchiveError) as e:                                 # its error comes back as itself
            pool.preview(CID, [("0xc", archives[0][1], T, T + 33)])
        assert e.value.code == "metadata-mismatch" and e.value.archive_id == "0xc" and not pool.broken
    finally:
        pool.shutdown()


def test_the_window_is_written_the_same_with_every_row_pending_or_some(tmp_path):
    """import_window records the pending rows by SQL when every row waits for its author, row by row otherwise."""
    ms = [m for i, m in enumerate(messages(48)) if i % 8 in (2, 3, 4, 6, 7)]    # signed only
    rows, pending = preview_rows(ms)
    assert len(pending) == len(rows)
    others = messages(96)[48:]                                                    # some not signed
    rows2, pending2 = preview_rows(others)
    assert 0 < len(pending2) < len(rows2)
    h = MemberHistory(tmp_path / "h.sqlite")
    h.import_window(CID, T, T + 48, rows + rows[:3], ["0xa"], pending)           # a message twice: one row
    h.import_window(CID, T + 48, T + 96, rows2, ["0xb"], pending2)
    got = {(r, bytes(x)) for r, x in h._con.execute("SELECT rid, hash FROM history_authors_pending")}
    want = {(r, bytes(x)) for r, x in h._con.execute("SELECT rowid, hash FROM history_messages")
            if bytes(x) in set(pending) | set(pending2)}
    assert got == want and len(got) == len(pending) + len(pending2)
    assert finish_authors(h, CID) == len(got)
    con = sqlite3.connect(tmp_path / "h.sqlite")
    assert H.messages(con, CID) == sorted((history_row(CID, m, "0xa") for m in ms + others),
                                          key=lambda r: (r[2], r[1]))
    con.close()
    h.close()
