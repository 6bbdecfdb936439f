"""History and Log in words (pytest-qt, offscreen), on a real history database written by the real importer:
authors by their Status three-word name with the key on hover, channels by name, rows fetched as the table
scrolls, search over the whole history (FTS5), and a log that speaks sentences with the raw JSON one click away."""
from __future__ import annotations

import pytest
from coincurve import PrivateKey
from PySide6.QtCore import Qt

from core.archive.codec import keccak256
from core.node import events as E
from core.node.events import Event
from core.status.application_metadata import wrap_application, wrap_public
from core.status.community_names import COMMUNITY_DESCRIPTION
from core.status.history_search import HistorySearch
from core.storage.member_history import MemberHistory
from gui.views.history import PAGE, HistoryView
from gui.views.log import LogView
from tests.unit.status.test_community_names import description_bytes

OWNER = PrivateKey(keccak256(b"words-owner"))
CID = "0x" + OWNER.public_key.format(compressed=True).hex()
NAMED = "3a8e5f0c-1111-4222-8333-444455556666"
UNNAMED = "77c0ffee-aaaa-4bbb-8ccc-ddddeeeeffff"
KEYS = {  # status-go and status-web test vectors: key -> the name Status shows
    "04eedbaafd6adf4a9233a13e7b1c3c14461fffeba2e9054b8d456ce5f6ebeafadcbf3dce3716253fbc391277fa5a086b60b283daf61fb5b1"
    "f26895f456c2f31ae3": "Darkorange Blue Bubblefish",
    "04ac419dac9a8bbb58825a3cde60eef0ee71b8cf6c63df611eeefc8e7aac7c79b55954b679d24cf5ec82da7ed921caf240628a9bfb3450c5"
    "111a9cffe54e631811": "Bumpy Absolute Crustacean",
}
KEY_A, KEY_B = list(KEYS)
N = 1300
T0 = 1_700_000_000


def _row(i: int, text: str | None, *, chat: str, sender: bytes | None, mtype: int = 1, payload: bytes = b"p"):
    return (CID, keccak256(f"m{i}".encode()), T0 + i, b"\x01\x02\x03\x04", sender, chat, i, f"m{i}", mtype, text,
            payload, "archive-1")


@pytest.fixture
def history_db(tmp_path):
    path = tmp_path / "history.sqlite"
    h = MemberHistory(path)
    rows = [_row(i, "find the needle" if i in (2, 1250) else f"message {i}",
                 chat=CID + (NAMED if i % 2 else UNNAMED), sender=bytes.fromhex(KEY_A if i % 3 else KEY_B))
            for i in range(N)]
    desc = wrap_public(wrap_application(description_bytes({NAMED: "general"}, 3), COMMUNITY_DESCRIPTION, OWNER), "d")
    rows.append(_row(N, None, chat=CID, sender=None, mtype=COMMUNITY_DESCRIPTION, payload=desc))
    h.import_window(CID, T0, T0 + N + 1, rows, ["archive-1"])
    yield path, h
    h.close()


@pytest.fixture
def view(qtbot, history_db):
    path, h = history_db
    v = HistoryView()
    qtbot.addWidget(v)
    v.resize(1100, 500)
    v.load_requested.connect(lambda cid, chat, limit, offset: v.show_page(
        cid, offset, h.messages(cid, chat_id=chat, limit=limit, offset=offset)))
    v.show()
    qtbot.waitExposed(v)
    yield v
    v.shutdown()


def _cells(v: HistoryView, row: int, role=Qt.ItemDataRole.DisplayRole) -> dict[str, str]:
    m = v.proxy
    return {m.headerData(c, Qt.Orientation.Horizontal): m.data(m.index(row, c), role) for c in range(m.columnCount())}


def _open(qtbot, v: HistoryView, path) -> None:
    v.set_searcher(HistorySearch(path))
    v.set_community(CID, "Words")
    qtbot.waitUntil(lambda: v.names.get(CID + NAMED) == "general", timeout=10_000)


def test_authors_by_three_word_name_with_key_on_hover_and_channels_by_name(qtbot, view, history_db):
    _open(qtbot, view, history_db[0])
    first, second = _cells(view, 0), _cells(view, 1)
    assert first["Author"] == KEYS[KEY_B] and second["Author"] == KEYS[KEY_A]          # rows 0 and 1
    assert _cells(view, 0, Qt.ItemDataRole.ToolTipRole)["Author"] == "0x" + KEY_B
    assert second["Channel"] == "#general"                                            # named in the description
    assert first["Channel"] == f"#{UNNAMED[:8]}…"                                     # no name known: shortened
    assert _cells(view, 0, Qt.ItemDataRole.ToolTipRole)["Channel"] == CID + UNNAMED
    assert first["Message"] == "message 0" and first["Time (UTC)"] == "2023-11-14 22:13"
    assert "0x04" not in "".join(str(x) for x in first.values())                    # no key hex on screen


def test_rows_are_fetched_as_the_table_scrolls(qtbot, view, history_db):
    _open(qtbot, view, history_db[0])
    assert view.model.rowCount() == PAGE
    assert "more as you scroll" in view.info.text()
    for want in (2 * PAGE, N + 1):
        view.view.scrollToBottom()
        qtbot.waitUntil(lambda: view.model.rowCount() == want, timeout=10_000)
    assert not view.model.canFetchMore() and view.info.text() == f"{N + 1} messages loaded (all)"
    last = _cells(view, N)
    assert last["Message"] == f"(no text: message type {COMMUNITY_DESCRIPTION})" and last["Channel"] == "(community)"


def test_search_covers_the_whole_history_not_only_loaded_rows(qtbot, view, history_db):
    _open(qtbot, view, history_db[0])
    assert view.model.rowCount() == PAGE                       # row 1250 is not loaded
    qtbot.keyClicks(view.search, "needle")
    qtbot.waitUntil(lambda: view.model.rowCount() == 2 and view.query == "needle", timeout=10_000)
    assert [_cells(view, r)["Message"] for r in (0, 1)] == ["find the needle", "find the needle"]
    assert [_cells(view, r)["Time (UTC)"] for r in (0, 1)] == ["2023-11-14 22:13", "2023-11-14 22:34"]
    assert view.info.text() == "2 messages in the whole history match “needle”"
    view.search.clear()                                         # back to the whole list, paged again
    qtbot.waitUntil(lambda: view.model.rowCount() == PAGE and view.query == "", timeout=10_000)


def test_search_by_author_name_and_channel_by_name(qtbot, view, history_db):
    _open(qtbot, view, history_db[0])
    view.chat.setText("#general")
    assert view.chat_filter() == CID + NAMED
    qtbot.keyClicks(view.search, "bumpy crustacean")             # Bob wrote every third message
    view.apply_search()
    expected = len([i for i in range(N) if i % 2 and not i % 3])
    qtbot.waitUntil(lambda: view.query and view.model.rowCount() == min(expected, PAGE), timeout=10_000)
    assert view.info.text().startswith(f"{expected} messages in the whole history match")
    assert {_cells(view, r)["Author"] for r in range(view.model.rowCount())} == {"Bumpy Absolute Crustacean"}
    assert {_cells(view, r)["Channel"] for r in range(view.model.rowCount())} == {"#general"}


def test_without_a_search_index_the_box_filters_loaded_rows_and_says_so(qtbot, view):
    view.set_community(CID, "Words")
    assert view.model.rowCount() == PAGE
    qtbot.keyClicks(view.search, "needle")
    view.apply_search()
    assert view.proxy.rowCount() == 1
    assert view.info.text() == ("Filtering the 500 loaded messages (1 match); whole-history search needs the "
                                "history database")


# ---------------------------------------------------------------- the log

@pytest.fixture
def log(qtbot):
    v = LogView()
    qtbot.addWidget(v)
    v.show()
    qtbot.waitExposed(v)
    return v


def _log_row(v: LogView, row: int) -> tuple[str, object]:
    idx = v.proxy.index(row, 2)
    return v.proxy.data(idx), v.proxy.data(idx, Qt.ItemDataRole.ForegroundRole)


def test_log_speaks_sentences_and_replays_are_not_failures(qtbot, log):
    events = [
        Event(E.MAGNETLINK_REJECTED, CID, {"reason": "older-clock", "clock": 41, "stored": 52}, 1_760_000_000),
        Event(E.MAGNETLINK_REJECTED, CID, {"reason": "replayed"}, 1_760_000_001),
        Event(E.MAGNETLINK_REJECTED, CID, {"reason": "not-community-key"}, 1_760_000_002),
        Event(E.HISTORY_ARCHIVE_DOWNLOADED, CID, {"archive_id": "0x" + "ab" * 32, "start": 1_759_000_000,
                                                  "end": 1_759_604_800}, 1_760_000_003),
        Event(E.IMPORTING_HISTORY_ARCHIVE_MESSAGES, CID, {"archives": ["a", "b"], "done": 1, "total": 4},
              1_760_000_004),
        Event(E.WAITING, CID, {"reason": "waiting 20 s for newer archive links", "until": 1_760_000_020},
              1_760_000_005),
        Event(E.ERROR, CID, {"code": "index-past-data", "message": "index runs past data",
                             "archive_id": "0x" + "cd" * 32}, 1_760_000_006),
    ]
    for e in events:
        log.add_event(e)
    texts = [_log_row(log, r)[0] for r in range(len(events))]
    assert texts == [
        "Ignored an older archive link (clock 41 < 52)",
        "Ignored an archive link already processed (a repeat of one we have)",
        "Ignored an archive link not signed by the community key",
        "Downloaded archive 0xababababab…abab (2025-09-27 19:06 to 2025-10-04 19:06 UTC)",
        "Importing week 2 of 4 (2 archives)",
        "Waiting 20 s for newer archive links (until 2025-10-09 08:53 UTC)",
        "Archive 0xcdcdcdcdcd…cdcd: index runs past data",
    ]
    colours = [_log_row(log, r)[1] for r in range(len(events))]
    red = "#c0392b"
    assert [c.name() if c is not None else None for c in colours] == [
        "#7f8c8d", "#7f8c8d", "#b9770e", None, None, None, red]         # replays grey, only the error red
    assert all("{" not in t and "archivist." not in t for t in texts)   # no JSON, no event names


def test_older_clock_sentence_from_the_events_facts(log):
    """The clocks come from the event's fields (core.node.member publishes them), not from its sentence."""
    log.add(E.MAGNETLINK_REJECTED, CID, {"reason": "older-clock", "detail": "clock 41 < stored 52"})
    assert _log_row(log, 0)[0] == "Ignored an older archive link"
    log.add(E.MAGNETLINK_REJECTED, CID, {"reason": "older-clock", "detail": "", "clock": 41, "stored": 52})
    assert _log_row(log, 1)[0] == "Ignored an older archive link (clock 41 < 52)"


def test_raw_json_is_one_click_away(qtbot, log):
    log.add_event(Event(E.MAGNETLINK_RECEIVED, CID, {"clock": 77, "link": "magnet:?xt=urn:btih:" + "0" * 40},
                        1_760_000_000))
    assert log.view.isColumnHidden(3) and log.view.isColumnHidden(4) and not log.json.isVisible()
    assert _log_row(log, 0)[0] == "Received a new archive link (clock 77)"
    qtbot.mouseClick(log.raw, Qt.MouseButton.LeftButton)
    assert not log.view.isColumnHidden(3) and log.json.isVisible()
    assert log.proxy.data(log.proxy.index(0, 3)) == E.MAGNETLINK_RECEIVED
    log.view.selectRow(0)
    shown = log.json.toPlainText()
    assert '"event": "archivist.magnetlinkReceived"' in shown and '"clock": 77' in shown and CID in shown
    log.search.setText("magnetlinkReceived")                  # the filter still finds raw names
    assert log.proxy.rowCount() == 1


def test_the_window_history_tab_uses_the_engines_history_database(qtbot, window, history_db):
    """What MainWindow.attach_engine does with the hook `self.history.attach_engine(engine)`: an engine whose
    NodePaths hold a history database gets whole-history search and channel names in the window's History tab."""
    from types import SimpleNamespace

    from core.node.community import NodePaths
    path, h = history_db
    engine = SimpleNamespace(paths=NodePaths(path.parent))
    hv = window.history
    hv.attach_engine(SimpleNamespace(paths=NodePaths(path.parent / "nowhere")))   # an owner: no history database
    assert hv.searcher is None and not (path.parent / "nowhere").exists()
    hv.attach_engine(engine)
    hv.load_requested.connect(lambda cid, chat, limit, offset: hv.show_page(
        cid, offset, h.messages(cid, chat_id=chat, limit=limit, offset=offset)))
    hv.set_community(CID, "Words")
    qtbot.waitUntil(lambda: hv.names.get(CID + NAMED) == "general", timeout=10_000)
    hv.search.setText("needle")
    hv.apply_search()
    qtbot.waitUntil(lambda: hv.model.rowCount() == 2, timeout=10_000)
    assert _cells(hv, 1) | {"Source": ""} == {  # row 1250: far beyond the first page
        "Time (UTC)": "2023-11-14 22:34", "Channel": f"#{UNNAMED[:8]}…", "Author": KEYS[KEY_A],
        "Message": "find the needle", "Source": "", "Message ID": _cells(hv, 1)["Message ID"]}
    hv.shutdown()


def test_a_row_whose_author_is_still_being_recovered_says_so(qtbot, view, history_db):
    """The import writes rows first and fills the authors in after (core.history_import.finish_authors); meanwhile
    MemberHistory.messages marks those rows and the Author column says so instead of showing nothing."""
    _open(qtbot, view, history_db[0])
    n = view.model.rowCount()
    view.show_page(CID, n, [{"id": "0x" + "ab" * 32, "chat_id": CID + NAMED, "timestamp": 1_700_000_000,
                             "author": "", "author_pending": True, "text": "still waiting", "app_type": 1,
                             "source": "archive", "archive_id": "0x01"}])
    qtbot.waitUntil(lambda: view.model.rowCount() == n + 1, timeout=10_000)
    row = next(r for r in range(view.proxy.rowCount()) if _cells(view, r)["Message"] == "still waiting")
    assert _cells(view, row)["Author"] == "(author pending)"
    assert _cells(view, 0)["Author"] == KEYS[KEY_B]              # finished rows keep their three-word name
