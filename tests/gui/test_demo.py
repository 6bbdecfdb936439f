"""`archivist demo --headless`: the same flow as the window, printed (owner builds and announces; the member
waits, fetches the latest archive, then all of them, and imports every message)."""
from __future__ import annotations

import re

import pytest


def test_headless_demo_flow(tmp_path, capsys):
    pytest.importorskip("core.node.engine")
    from core.node import events as E
    from gui.demo import run_headless
    assert run_headless(tmp_path, messages=800, weeks=6) == 0
    out = capsys.readouterr().out
    assert "member imported the latest archive" in out
    assert "member imported all 6 archives: 800 messages" in out
    assert f"[member] {E.DOWNLOADING_HISTORY_ARCHIVES_FINISHED}" in out
    assert "[member] archivist.waiting: waiting" in out      # the settle wait is announced with its reason
    # two separate libp2p hosts carried it: both peer IDs are printed, and they differ (issue 18)
    hosts = re.search(r"Waku relay between two libp2p hosts: owner (16Uiu2\w+) <-> member (16Uiu2\w+)", out)
    assert hosts and hosts.group(1) != hosts.group(2), out[:2000]
    assert re.search(r"the member received [1-9]\d* archive link\(s\) over Waku", out)
