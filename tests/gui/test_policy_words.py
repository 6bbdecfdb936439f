"""A member's download policies: one list of codes (core.torrent.selection.MODES) and one set of words
(gui.models.POLICY_WORDS) for the member view, the first-run screen, the node settings and Settings."""
from core.node.config import DEFAULT_POLICIES
from core.node.state import DownloadPolicy
from core.torrent.selection import MODES, Selection
from gui.models import POLICY_WORDS
from gui.views.node_settings import POLICIES


def test_every_view_offers_the_same_policies_in_the_same_words():
    assert tuple(p.value for p in DownloadPolicy) == MODES == tuple(POLICY_WORDS)
    assert set(DEFAULT_POLICIES) < set(MODES)
    assert POLICIES == (("all", "All history"), ("latest", "Only the latest week"))
    for mode in MODES:
        Selection(mode, 1, 2) if mode == "range" else Selection(mode)


def test_the_member_and_first_run_radio_buttons_use_the_words(qtbot):
    from gui.views.member import MemberView
    from gui.views.welcome_pages import MemberPage
    from pathlib import Path
    for view in (MemberView(), MemberPage(Path("."), default_policy="all")):
        qtbot.addWidget(view)
        assert view.all_btn.text().startswith(POLICY_WORDS["all"])
        assert view.latest_btn.text().startswith(POLICY_WORDS["latest"])
        assert view.range_btn.text().startswith(POLICY_WORDS["range"])
