"""The archive bookkeeping tables: one definition (core.storage.archive_state), and databases written by the
previous version (which defined them twice, differently) open with their rows and behave the same."""
from __future__ import annotations

import sqlite3

import pytest

from core.storage import archive_state as S
from core.storage import history
from core.storage.archive_state import ArchiveInfo, ArchiveStateDB
from core.storage.member_history import MemberHistory

C = "0x02" + "ab" * 32
OTHER = "0x03" + "cd" * 32
LINK = "magnet:?xt=urn:btih:" + "1" * 40

# The previous version's history.sqlite tables, verbatim: `hash TEXT PRIMARY KEY` without ON CONFLICT REPLACE.
OLD_HISTORY = """
CREATE TABLE history_messages (
  community_id TEXT NOT NULL, hash BLOB NOT NULL, timestamp INTEGER NOT NULL, topic BLOB NOT NULL, sender BLOB,
  chat_id TEXT, clock INTEGER, message_id TEXT, message_type INTEGER, text TEXT, raw_payload BLOB NOT NULL,
  archive_id TEXT, PRIMARY KEY (community_id, hash)
);
CREATE TABLE community_message_archive_hashes (
  community_id TEXT NOT NULL,
  hash TEXT PRIMARY KEY,
  imported BOOL DEFAULT FALSE
);
CREATE TABLE communities_archive_info (
  community_id TEXT PRIMARY KEY ON CONFLICT REPLACE,
  magnetlink_clock INT NOT NULL DEFAULT 0,
  last_message_archive_end_date INT NOT NULL DEFAULT 0,
  last_magnetlink_uri TEXT
);
"""
# The previous version's state.sqlite (archive_state.SCHEMA then), verbatim.
OLD_STATE = """
CREATE TABLE communities_settings (
  community_id TEXT PRIMARY KEY ON CONFLICT REPLACE,
  message_archive_seeding_enabled BOOLEAN DEFAULT FALSE,
  message_archive_fetching_enabled BOOLEAN DEFAULT FALSE,
  history_archive_support_enabled BOOLEAN DEFAULT FALSE
);
CREATE TABLE communities_archive_info (
  community_id TEXT PRIMARY KEY ON CONFLICT REPLACE,
  magnetlink_clock INT NOT NULL DEFAULT 0,
  last_message_archive_end_date INT NOT NULL DEFAULT 0,
  last_magnetlink_uri TEXT
);
CREATE TABLE community_message_archive_hashes (
  community_id TEXT NOT NULL,
  hash TEXT PRIMARY KEY ON CONFLICT REPLACE,
  imported BOOL DEFAULT FALSE
);
CREATE TABLE archivist_link_rejections (
  community_id TEXT NOT NULL, reason TEXT NOT NULL, count INT NOT NULL DEFAULT 0,
  PRIMARY KEY (community_id, reason)
);
CREATE TABLE archivist_pending_links (
  community_id TEXT PRIMARY KEY, link TEXT NOT NULL, clock INT NOT NULL, received_at REAL NOT NULL
);
CREATE TABLE archivist_settings (key TEXT PRIMARY KEY, value TEXT);
"""

# What the previous version had written: C's archives 0xa1 (imported) and 0xa2 (seen), OTHER's 0xb1 (imported).
OLD_ROWS = """
INSERT INTO community_message_archive_hashes VALUES ('{c}', '0xa1', 1), ('{c}', '0xa2', 0), ('{o}', '0xb1', 1);
INSERT INTO communities_archive_info VALUES ('{c}', 7, 1000, '{link}');
""".format(c=C, o=OTHER, link=LINK)


def msg(ts: int, tag: int, archive_id: str | None = None) -> tuple:
    return (C, bytes([tag]) * 32, ts, b"abcd", None, None, None, None, None, None, b"p", archive_id)


def old_db(path, layout: str) -> str:
    con = sqlite3.connect(path)
    con.executescript(layout + OLD_ROWS)
    if layout is OLD_HISTORY:
        con.execute("INSERT INTO history_messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", msg(500, 1, "0xa1"))
    if layout is OLD_STATE:
        con.execute("INSERT INTO archivist_pending_links VALUES (?, ?, 8, 12.5)", (C, LINK))
        con.execute("INSERT INTO archivist_link_rejections VALUES (?, 'older-clock', 3)", (C,))
    con.commit()
    con.close()
    return str(path)


def table_sql(path) -> dict[str, str]:
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    finally:
        con.close()


def bookkeeping(con: sqlite3.Connection) -> list[tuple]:
    return con.execute("SELECT community_id, hash, imported FROM community_message_archive_hashes "
                       "ORDER BY hash").fetchall()


def test_one_definition_in_both_database_files(tmp_path):
    """A new state.sqlite and a new history.sqlite get the very same archive tables, from ARCHIVE_TABLES."""
    ArchiveStateDB(tmp_path / "state.sqlite").close()
    history.connect(tmp_path / "history.sqlite").close()
    state, hist = table_sql(tmp_path / "state.sqlite"), table_sql(tmp_path / "history.sqlite")
    for table in ("communities_archive_info", "community_message_archive_hashes"):
        assert state[table] == hist[table]
        assert state[table].replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS") in S.ARCHIVE_TABLES
    assert "ON CONFLICT REPLACE,\n  imported" in hist["community_message_archive_hashes"]


def test_old_history_database_keeps_its_rows_and_accepts_writes(tmp_path):
    path = old_db(tmp_path / "history.sqlite", OLD_HISTORY)
    before = table_sql(path)
    h = MemberHistory(path)
    assert h.imported_archive_ids(C) == {"0xa1"}
    assert h.count(C) == 1
    # importing 0xa2 and 0xa1 again: a row per archive ID is replaced although the old key has no REPLACE rule
    assert h.import_window(C, 600, 700, [msg(650, 2, "0xa2")], ["0xa1", "0xa2"]) == 1
    assert h.imported_archive_ids(C) == {"0xa1", "0xa2"}
    h.close()
    con = history.connect(path)
    history.add_archive_ids(con, C, ["0xa1", "0xa3"])             # seen again: keeps the imported flag
    S.mark_archives(con, OTHER, ["0xb1"], imported=False)        # the member's re-mark, on the old key
    assert bookkeeping(con) == [(C, "0xa1", 1), (C, "0xa2", 1), (C, "0xa3", 0), (OTHER, "0xb1", 0)]
    assert history.archive_info(con, C) == ArchiveInfo(7, 1000, LINK)   # the window end 700 < 1000: kept
    assert [m[2] for m in history.messages(con, C)] == [500, 650]
    con.close()
    assert table_sql(path) == before                             # no table altered, dropped or added


def test_old_state_database_keeps_its_rows_and_accepts_writes(tmp_path):
    path = old_db(tmp_path / "state.sqlite", OLD_STATE)
    db = ArchiveStateDB(path)
    assert db.archive_info(C) == ArchiveInfo(7, 1000, LINK)
    assert db.archive_ids(C) == {"0xa1", "0xa2"}
    assert db.archive_ids(C, imported=True) == {"0xa1"}
    assert db.archive_ids(C, imported=False) == {"0xa2"}
    assert db.pending_link(C) == (LINK, 8, 12.5)
    assert db.rejections(C) == {"older-clock": 3}
    db.set_magnetlink_clock(C, 9)                                # one column moves, the others stay
    db.mark_archive(C, "0xa2", imported=True)
    assert db.archive_info(C) == ArchiveInfo(9, 1000, LINK)
    assert db.archive_ids(C, imported=True) == {"0xa1", "0xa2"}
    assert db.archive_ids(OTHER, imported=True) == {"0xb1"}
    db.close()


@pytest.mark.parametrize("layout", ["new", "old-history", "old-state"])
def test_same_statements_same_results_on_every_layout(tmp_path, layout):
    """The functions never lean on a table's own conflict rule, so each layout ends in the same rows."""
    path = str(tmp_path / "db.sqlite")
    if layout == "new":
        con = sqlite3.connect(path)
        con.executescript(S.ARCHIVE_TABLES + OLD_ROWS)
        con.commit()
        con.close()
    else:
        old_db(path, OLD_HISTORY if layout == "old-history" else OLD_STATE)
    con = sqlite3.connect(path, isolation_level=None)
    S.mark_archives(con, C, ["0xa1", "0xa4"], imported=False)
    S.add_archive_ids(con, C, ["0xa2", "0xa5"])
    S.mark_archives(con, C, ["0xa5"], imported=True)
    S.set_last_archive_end(con, C, 900)                         # the control node's plain set may go back
    S.raise_last_archive_end(con, C, 800)                       # the member's never does
    S.set_last_magnetlink(con, OTHER, LINK)
    assert bookkeeping(con) == [(C, "0xa1", 0), (C, "0xa2", 0), (C, "0xa4", 0), (C, "0xa5", 1), (OTHER, "0xb1", 1)]
    assert S.archive_info(con, C) == ArchiveInfo(7, 900, LINK)
    assert S.archive_info(con, OTHER) == ArchiveInfo(0, 0, LINK)
    assert S.archive_info(con, "0x04") == ArchiveInfo()
    con.close()
