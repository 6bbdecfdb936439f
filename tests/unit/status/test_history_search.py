"""Whole-history search (core.status.history_search) on real SQLite files written by the real importer
(core.storage.history.import_window): found beyond any page, incremental, never touching a history row, surviving
re-imports, and channel names only from descriptions the community key signed."""
from __future__ import annotations

import sqlite3

import pytest
from coincurve import PrivateKey

from core.archive.codec import keccak256
from core.status.alias import three_word_name
from core.status.application_metadata import wrap_application, wrap_public
from core.status.community_names import COMMUNITY_DESCRIPTION
from core.storage import history as H
from core.status.history_search import HistorySearch, fts_query, has_fts5

OWNER = PrivateKey(keccak256(b"history-search-owner"))
CID = "0x" + OWNER.public_key.format(compressed=True).hex()
OTHER_CID = "0x02" + "ab" * 32
CHAT = CID + "3a8e5f0c-1111-4222-8333-444455556666"
ALICE = bytes.fromhex("04eedbaafd6adf4a9233a13e7b1c3c14461fffeba2e9054b8d456ce5f6ebeafadcbf3dce3716253fbc391277fa5a086b"
                      "60b283daf61fb5b1f26895f456c2f31ae3")       # status-go: "Darkorange Blue Bubblefish"
BOB = bytes.fromhex("04ac419dac9a8bbb58825a3cde60eef0ee71b8cf6c63df611eeefc8e7aac7c79b55954b679d24cf5ec82da7ed921caf2"
                    "40628a9bfb3450c5111a9cffe54e631811")         # status-web: "Bumpy Absolute Crustacean"
T0 = 1_700_000_000


def row(i: int, text: str | None, *, cid: str = CID, sender: bytes = ALICE, chat: str = CHAT, mtype: int = 1,
        payload: bytes = b"p", archive: str | None = "a1") -> tuple:
    return (cid, keccak256(f"{cid}-{i}".encode()), T0 + i, b"\x01\x02\x03\x04", sender, chat, i, f"m{i}", mtype,
            text, payload, archive)


def text_of(i: int) -> str:
    return {3: "the needle is here", 700: "another NEEDLE, far down", 1150: "néedle with an accent"}.get(
        i, f"ordinary chatter number {i}")


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "history.sqlite"
    con = H.connect(path)
    H.import_window(con, CID, T0, T0 + 1200, [row(i, text_of(i), sender=ALICE if i % 2 else BOB)
                                              for i in range(1200)], ["a1"])
    H.import_window(con, OTHER_CID, T0, T0 + 10, [row(i, "needle elsewhere", cid=OTHER_CID) for i in range(5)])
    yield path, con
    con.close()


@pytest.fixture
def search(db):
    s = HistorySearch(db[0], batch=300)
    yield s
    s.close()


def test_python_sqlite_has_fts5():
    assert has_fts5()


def test_finds_messages_beyond_the_first_pages_oldest_first(search):
    found = search.search(CID, "needle")
    assert [r["text"] for r in found] == ["the needle is here", "another NEEDLE, far down", "néedle with an accent"]
    assert [r["timestamp"] for r in found] == [T0 + 3, T0 + 700, T0 + 1150]
    assert search.count(CID, "needle") == 3
    assert search.count(OTHER_CID, "needle") == 5                 # each community searches its own rows
    assert search.search(CID, "needle", chat_id=CID + "other") == []
    assert found[0]["author"] == "0x" + ALICE.hex() and found[0]["source"] == "archive"


def test_words_are_prefixes_and_all_must_match(search):
    assert search.count(CID, "need far") == 1
    assert search.count(CID, "ordinary chatter") == 1197
    assert search.search(CID, "chatter number 1199")[0]["text"] == "ordinary chatter number 1199"


def test_search_by_author_three_word_name(search):
    assert three_word_name(BOB) == "Bumpy Absolute Crustacean"
    assert search.count(CID, "bumpy crustacean") == 600
    assert search.count(CID, "darkorange bubblefish needle") == 1      # row 3 is Alice's, 700 and 1150 Bob's
    assert search.count(CID, "bumpy needle") == 2
    assert search.count(CID, ALICE.hex()[:20]) == 600                   # the key's hex works too


def test_paging_through_results(search):
    pages = [search.search(CID, "ordinary", limit=500, offset=o) for o in (0, 500, 1000)]
    assert [len(p) for p in pages] == [500, 500, 197]
    ids = [r["id"] for p in pages for r in p]
    assert len(set(ids)) == 1197


@pytest.mark.parametrize("hostile", ['"', 'AND OR NOT', '(needle', 'needle*', 'body:needle', '""" *', "NEAR(a b)",
                                     "-", "'"])
def test_any_typed_text_is_words_never_fts_syntax(search, hostile):
    search.search(CID, hostile)                 # no sqlite3.OperationalError (fts5 syntax error)
    assert fts_query("   ") is None and search.search(CID, "  ") == []


def test_incremental_and_history_rows_untouched(db, search):
    path, con = db
    before = H.messages(con, CID)
    assert search.catch_up() == 1205
    assert search.catch_up() == 0                       # nothing new: nothing re-indexed
    H.import_window(con, CID, T0 + 5000, T0 + 5010, [row(5000 + i, f"late haystack {i}") for i in range(3)], ["a2"])
    assert search.catch_up() == 3                       # only the new rows
    assert search.count(CID, "haystack") == 3
    after = H.messages(con, CID)
    assert after[:len(before)] == before and len(after) == len(before) + 3


def test_reimport_upserts_are_found_once_with_the_new_text(db, search):
    path, con = db
    assert search.count(CID, "needle") == 3
    # the archive's copy replaces the local one (INSERT OR REPLACE: new rowid), twice, with a text the live copy
    # lacked (say it was undecodable then)
    H.import_window(con, CID, T0, T0 + 1200, [row(3, "the needle is here"), row(4, "now decoded: haystack")], ["a1"])
    H.import_window(con, CID, T0, T0 + 1200, [row(3, "the needle is here"), row(4, "now decoded: haystack")], ["a1"])
    assert search.count(CID, "needle") == 3
    assert [r["text"] for r in search.search(CID, "haystack")] == ["now decoded: haystack"]
    assert search.count(CID, "ordinary chatter") == 1196               # row 4's old text is gone from the index
    n_docs = sqlite3.connect(path).execute("SELECT COUNT(*) FROM history_search_docs").fetchone()[0]
    assert n_docs == 1205                                               # one document per message, not per import
    assert H.count(con, CID) == 1200


def test_index_survives_reopening_and_finds_rows_below_the_watermark(db, search):
    path, con = db
    search.catch_up()
    search.close()
    # a rowid reused below the watermark (the newest row deleted, another inserted: SQLite reuses max(rowid)+1)
    top = con.execute("SELECT MAX(rowid) FROM history_messages").fetchone()[0]
    con.execute("DELETE FROM history_messages WHERE rowid = ?", (top,))
    H.import_window(con, CID, T0, T0 + 1, [row(9001, "reused rowid haystack")])
    assert con.execute("SELECT rowid FROM history_messages WHERE text LIKE 'reused%'").fetchone()[0] == top
    again = HistorySearch(path)
    try:
        assert again.count(CID, "haystack") == 1
        assert again.count(CID, "needle") == 3
    finally:
        again.close()


def _description(names: dict[str, str], clock: int) -> bytes:
    from tests.unit.status.test_community_names import description_bytes
    return description_bytes(names, clock)


def _description_row(i: int, signer: PrivateKey, names: dict[str, str], clock: int) -> tuple:
    app = wrap_application(_description(names, clock), COMMUNITY_DESCRIPTION, signer)
    return row(i, None, mtype=COMMUNITY_DESCRIPTION, payload=wrap_public(app, "device-1"), chat=CID, sender=None)


def test_channel_names_from_descriptions_the_community_signed(db, search):
    path, con = db
    mallory = PrivateKey(keccak256(b"mallory"))
    uuid = CHAT[len(CID):]
    H.import_window(con, CID, T0, T0 + 9000, [
        _description_row(8000, OWNER, {uuid: "general", "b2": "random"}, clock=5),
        _description_row(8001, OWNER, {uuid: "general-chat"}, clock=9),
        _description_row(8002, mallory, {uuid: "send-me-your-seed"}, clock=99),      # forged: not the community key
        row(8003, None, mtype=COMMUNITY_DESCRIPTION, payload=b"\xff\x00garbage", sender=None),
    ])
    assert search.channel_names(CID) == {CHAT: "general-chat", CID + "b2": "random"}
    assert search.channel_names(OTHER_CID) == {}


def test_a_found_row_says_its_author_is_pending_as_the_browser_does(tmp_path):
    """Search and the History browser read a row through one definition (core.storage.member_history.row_columns
    and history_row): a row whose author is still being filled in says so in both (search's own copy lacked the
    flag, and the view showed a blank author for it)."""
    from core.storage.member_history import MemberHistory
    path = tmp_path / "history.sqlite"
    con = H.connect(path)
    rows = [row(i, f"needle {i}") for i in range(3)]
    H.import_window(con, CID, T0, T0 + 10, rows, ["a1"], pending=[rows[1][1]])
    con.close()
    search, browser = HistorySearch(path), MemberHistory(path)
    try:
        found, listed = search.search(CID, "needle"), browser.messages(CID)
        assert found == listed and [r["author_pending"] for r in found] == [False, True, False]
    finally:
        search.close()
        browser.close()
