"""A community without a name is called by its short ID (gui.models.short_id) in the tray's notices as in the
lists; the tray had its own cut (the first 10 characters and "…", no last four)."""
from types import SimpleNamespace

from gui.models import short_id
from gui.tray import Tray

CID = "0x02" + "ab" * 31 + "9f1c"


def test_the_tray_names_a_community_as_the_lists_do():
    assert Tray._name(SimpleNamespace(adapter=None), CID) == short_id(CID) == "0x02ababab…9f1c"
    assert Tray._name(SimpleNamespace(adapter=None), None) == "Archivist"
