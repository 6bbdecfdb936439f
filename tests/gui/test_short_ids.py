"""Short IDs (gui.models): a community without a name is called by its short ID in the tray's notices as in the
lists (the tray had its own cut: the first 10 characters and "…", no last four); an archive ID is cut alike in
every view."""
from types import SimpleNamespace

from gui.models import short_id
from gui.tray import Tray

CID = "0x02" + "ab" * 31 + "9f1c"


def test_the_tray_names_a_community_as_the_lists_do():
    assert Tray._name(SimpleNamespace(adapter=None), CID) == short_id(CID) == "0x02ababab…9f1c"
    assert Tray._name(SimpleNamespace(adapter=None), None) == "Archivist"


def test_an_archive_id_is_written_alike_in_every_view(qtbot):
    """The log, the member's list, the key box and the Inspector cut an archive ID at the same place (they used
    10, 12, 12 and 14 characters): a support person matches a log line with a row by eye."""
    from core.archive.inspect import ArchiveRow
    from core.node import events as E
    from core.node.state import ArchiveInfo
    from gui.views.inspector import archive_columns
    from gui.views.log import LogView
    from gui.views.member import MemberView
    aid = "0x" + "12" * 31 + "9f1c"
    want = "0x1212121212…9f1c"
    log = LogView()
    qtbot.addWidget(log)
    log.add_event(E.Event(E.HISTORY_ARCHIVE_DOWNLOADED, CID, {"archive_id": aid}, 1_760_000_000))
    log.add_event(E.Event(E.ERROR, CID, {"archive_id": aid, "message": "index runs past data"}, 1_760_000_001))
    texts = sorted(log.proxy.data(log.proxy.index(r, 2)) for r in range(2))
    assert texts == [f"Archive {want}: index runs past data", f"Downloaded archive {want}"]
    member = MemberView()
    qtbot.addWidget(member)
    assert member.model.columns[0].text(ArchiveInfo(aid, 0, 1, 2)) == want
    assert archive_columns()[0].text(ArchiveRow(aid, 0, 1, 0, 2, 0, range(1))) == want
