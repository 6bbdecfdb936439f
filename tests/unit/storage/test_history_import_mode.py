"""core.storage.history.import_mode, through MemberHistory as the importer uses it: a small history's chat index is
dropped while an import writes and made again when it ends, or when any connection opens the file after a crash;
a large history keeps it; rows and queries are the same either way. Real SQLite files."""
from __future__ import annotations

import sqlite3

from core.storage import history as H
from core.storage.member_history import MemberHistory

CID = "0x02" + "cd" * 32


def rows(n: int, start: int = 0) -> list[tuple]:
    return [(CID, (start + i).to_bytes(32, "big"), 1_700_000_000 + start + i, b"\x01\x02\x03\x04", None,
             f"chat-{i % 3}", (start + i) * 7 % 101, None, 1, f"text {i}", b"payload", "0xa") for i in range(n)]


def indexes(path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND "
                                          "tbl_name = 'history_messages' AND sql IS NOT NULL")}
    finally:
        con.close()


def pragma(h: MemberHistory, name: str):
    return h._con.execute(f"PRAGMA {name}").fetchone()[0]


def test_the_chat_index_is_made_after_the_windows_of_an_import_into_a_small_history(tmp_path):
    path = tmp_path / "h.sqlite"
    h = MemberHistory(path)
    assert indexes(path) == {"history_messages_range", "history_messages_chat"}
    assert pragma(h, "page_size") == H.PAGE_SIZE and pragma(h, "cache_size") == -H.CACHE_KIB
    h.import_window(CID, 0, 10, rows(50), ["0xa"], [])
    assert indexes(path) == {"history_messages_range"}                    # dropped while the windows go in
    assert pragma(h, "cache_size") == -H.IMPORT_CACHE_KIB
    assert pragma(h, "wal_autocheckpoint") == H.IMPORT_WAL_BYTES // H.PAGE_SIZE
    h.import_window(CID, 10, 20, rows(50, 50), ["0xb"], [])
    assert h.count(CID) == 100 and len(h.messages(CID, chat_id="chat-1")) == 34     # queries work without it
    h.end_import()
    assert indexes(path) == {"history_messages_range", "history_messages_chat"}
    assert pragma(h, "cache_size") == -H.CACHE_KIB and pragma(h, "wal_autocheckpoint") == 1000
    con = sqlite3.connect(path)
    assert H.messages(con, CID) == sorted(rows(50) + rows(50, 50), key=lambda r: (r[2], r[1]))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    h.end_import()                                                        # again: nothing to do
    h.close()


def test_a_crash_during_the_import_leaves_every_row_and_the_next_open_makes_the_index(tmp_path):
    path = tmp_path / "h.sqlite"
    h = MemberHistory(path)
    h.import_window(CID, 0, 10, rows(40), ["0xa"], [])
    h._con.close()                            # gone without end_import, as a killed process leaves it
    assert indexes(path) == {"history_messages_range"}
    again = MemberHistory(path)               # any history connection: the schema makes it again
    assert indexes(path) == {"history_messages_range", "history_messages_chat"}
    assert again.count(CID) == 40 and again.imported_archive_ids(CID) == {"0xa"}
    again.close()


def test_a_large_history_keeps_its_chat_index(tmp_path, monkeypatch):
    monkeypatch.setattr(H, "REINDEX_BELOW", 30)
    path = tmp_path / "h.sqlite"
    h = MemberHistory(path)
    h.add_live(CID, rows(30))
    h.import_window(CID, 0, 10, rows(20, 30), ["0xa"], [])
    assert indexes(path) == {"history_messages_range", "history_messages_chat"}
    h.end_import()
    assert h.count(CID) == 50
    h.close()


def test_another_writer_holding_the_database_leaves_the_index_and_raises_nothing(tmp_path):
    path = tmp_path / "h.sqlite"
    H.connect(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")                          # holds the write lock
    con = sqlite3.connect(path, isolation_level=None, timeout=0.05)
    H.import_mode(con, True)                                  # cannot drop it: goes on without
    assert indexes(path) == {"history_messages_range", "history_messages_chat"}
    other.execute("ROLLBACK")
    H.import_mode(con, True)
    assert indexes(path) == {"history_messages_range"}
    other.execute("BEGIN IMMEDIATE")
    H.import_mode(con, False)                                 # cannot make it: the next open does
    assert indexes(path) == {"history_messages_range"}
    other.execute("ROLLBACK")
    con.close()
    other.close()
    H.connect(path).close()
    assert indexes(path) == {"history_messages_range", "history_messages_chat"}
