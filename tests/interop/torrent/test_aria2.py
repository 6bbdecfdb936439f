"""aria2 (an independent BitTorrent implementation from Debian) against our seeder and our member.

No tracker and no DHT: the side that knows the other's port connects (our seeder reaches out to a listening
aria2c; our member is given aria2c's port with --peer)."""
from __future__ import annotations

import shutil

import pytest

from core.torrent.selection import Selection
from tests.interop.torrent.conftest import free_port, wait_listening

pytestmark = pytest.mark.interop


def test_aria2_downloads_our_seeded_torrent(aria2, services, community, tmp_path):
    seeder = services("seeder")
    st = seeder.seed(community.community_id, community.data_dir, community.raw)
    port = free_port()
    proc = aria2(f"--dir={tmp_path / 'aria'}", "--seed-time=0", str(community.torrent_path), port=port)
    wait_listening(port, proc)
    st.connect_peer("127.0.0.1", port)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    got = tmp_path / "aria" / community.community_id
    assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()
    assert (got / "index").read_bytes() == (community.folder / "index").read_bytes()


def test_aria2_fetches_metadata_from_our_magnet(aria2, services, community, tmp_path):
    """aria2 gets the metainfo (102400-byte pieces, built by our code) from our seeder via ut_metadata."""
    seeder = services("seeder")
    st = seeder.seed(community.community_id, community.data_dir, community.raw)
    port = free_port()
    proc = aria2(f"--dir={tmp_path / 'aria'}", "--seed-time=0", community.magnet, port=port)
    wait_listening(port, proc)
    st.connect_peer("127.0.0.1", port)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    got = tmp_path / "aria" / community.community_id
    assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()


def test_our_members_download_what_aria2_seeds(aria2, services, community, tmp_path):
    """Two members at once (aria2 unchokes on a ~10 s cycle): one fetches everything, one only the latest."""
    src = tmp_path / "aria-seed"
    shutil.copytree(community.folder, src / community.community_id)
    port = free_port()
    proc = aria2(f"--dir={src}", "--seed-ratio=0.0", "--check-integrity=true", str(community.torrent_path),
                 port=port)
    wait_listening(port, proc)
    peers = [("127.0.0.1", port)]
    full = services("full").fetch(community.magnet, tmp_path / "full", Selection("all"), peers=peers)
    latest = services("latest").fetch(community.magnet, tmp_path / "latest", Selection("latest"), peers=peers)
    assert full.wait(90) and full.state == "complete", full.snapshot()
    assert latest.wait(90) and latest.state == "complete", latest.snapshot()
    got = tmp_path / "full" / community.community_id
    assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()
    assert (got / "index").read_bytes() == (community.folder / "index").read_bytes()
    entries = community.entries()
    newest = max(entries, key=lambda k: entries[k].end)
    mi = community.metainfo
    index = set(range(mi.file_length("data") // 102400, mi.num_pieces))
    assert latest.chosen == [newest]
    assert latest.received == set(entries[newest].pieces) | index
