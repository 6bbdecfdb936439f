"""The Inspector fetches a magnet link from a real seeder on 127.0.0.1 (its own libtorrent session) and verifies
what arrived."""
from __future__ import annotations

import pytest


@pytest.fixture
def seeder(community_copy, tmp_path):
    pytest.importorskip("core.torrent.service")
    from core.torrent.service import TorrentService
    from core.torrent.settings import TorrentSettings
    svc = TorrentService(TorrentSettings.loopback(), tmp_path / "seed-state").start()
    cid = community_copy["synth"].community_id
    svc.seed(cid, community_copy["folder"].parent, community_copy["torrent"])
    yield svc
    svc.close()


def test_magnet_is_fetched_and_verified(qtbot, window, community_copy, seeder):
    from core.torrent.settings import TorrentSettings
    window.enable_magnet_fetch(TorrentSettings.loopback(metadata_timeout=10.0))
    magnet = community_copy["result"].magnet + f"&x.pe=127.0.0.1:{seeder.listen_port}"
    with qtbot.waitSignal(window.inspector.opened, timeout=60_000) as b:
        window.open_path(magnet)
    res = b.args[0]
    assert res.kind == "magnet" and res.error is None, res.report.findings
    assert res.report.ok and res.report.archives == len(community_copy["result"].new_archive_ids)
    assert res.report.messages == community_copy["synth"].messages
    assert window.inspector.archives.rowCount() == res.report.archives


def test_magnet_without_peers_says_why(qtbot, window):
    from core.torrent.settings import TorrentSettings
    window.enable_magnet_fetch(TorrentSettings.loopback(metadata_timeout=1.0, metadata_retries=0))
    window.inspector.fetcher.timeout = 5.0
    magnet = "magnet:?xt=urn:btih:" + "ab" * 20 + "&dn=0x02" + "11" * 32
    with qtbot.waitSignal(window.inspector.opened, timeout=30_000) as b:
        window.open_path(magnet)
    res = b.args[0]
    assert res.faults and res.error
    assert "could not be fetched" in res.faults[0].message
