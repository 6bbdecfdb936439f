"""Two real libtorrent sessions on 127.0.0.1: our seeder and our member."""
from __future__ import annotations

import threading

from core.archive.constants import PIECE_LENGTH
from core.torrent import events as ev
from core.torrent.selection import Selection, index_pieces
from tests.integration.torrent.support import make_community, piece_slice

WAIT = 60


def _fetch(services, community, tmp_path, selection, **kw):
    seeder = services("seeder")
    seeder.seed(community.community_id, community.data_dir, community.raw)
    member = services("member", **kw)
    job = member.fetch(community.magnet, tmp_path / "member", selection, peers=[("127.0.0.1", seeder.listen_port)])
    assert job.wait(WAIT), job.snapshot()
    assert job.state == "complete", job.snapshot()
    return seeder, member, job


def _index_range(community):
    mi = community.metainfo
    return set(index_pieces(mi.file_length("data"), mi.file_length("index")))


def test_full_fetch_is_byte_identical(services, community, tmp_path):
    seeder, member, job = _fetch(services, community, tmp_path, Selection("all"))
    got = tmp_path / "member" / community.community_id
    assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()
    assert (got / "index").read_bytes() == (community.folder / "index").read_bytes()
    mi = community.metainfo
    assert job.received == set(range(mi.num_pieces))
    assert job.downloaded >= mi.total_length
    assert job.snapshot()["progress"] == 1.0 and job.snapshot()["wanted_bytes"] == mi.total_length


def _check_partial(community, tmp_path, job, chosen_ids):
    entries = community.entries()
    assert sorted(job.chosen) == sorted(chosen_ids)
    archive_pieces = {p for aid in chosen_ids for p in entries[aid].pieces}
    expected = archive_pieces | _index_range(community)
    # exactly the chosen archives' pieces plus the index, nothing else
    assert job.received == expected
    assert job.wanted == expected
    wanted_bytes = len(archive_pieces) * PIECE_LENGTH + community.metainfo.file_length("index")
    assert job.wanted_bytes == wanted_bytes
    # payload bytes received: the wanted bytes, at most a few blocks of redundancy more
    assert wanted_bytes <= job.downloaded <= wanted_bytes + 4 * 16384
    got = tmp_path / "member" / community.community_id
    src = community.folder
    assert piece_slice(got / "data", archive_pieces) == piece_slice(src / "data", archive_pieces)
    others = set(range(community.metainfo.file_length("data") // PIECE_LENGTH)) - archive_pieces
    assert set(piece_slice(got / "data", others)) <= {0}, "an unchosen archive was written"


def test_latest_only_fetches_exactly_the_latest_archive(services, community, tmp_path):
    entries = community.entries()
    latest = max(entries, key=lambda k: entries[k].end)
    _, _, job = _fetch(services, community, tmp_path, Selection("latest"))
    _check_partial(community, tmp_path, job, [latest])


def test_time_range_fetches_exactly_the_overlapping_archives(services, community, tmp_path):
    entries = sorted(community.entries().items(), key=lambda kv: kv[1].start)
    # a range covering the end of the 2nd archive and the start of the 3rd
    lo, hi = entries[1][1].end - 3600, entries[2][1].start + 3600
    chosen = [k for k, e in entries if e.start < hi and e.end > lo]
    assert len(chosen) == 2
    _, _, job = _fetch(services, community, tmp_path, Selection("range", lo, hi))
    _check_partial(community, tmp_path, job, chosen)


def test_seeder_reports_peers_and_uploads(services, community, tmp_path):
    seeds: list[dict] = []
    seeder = services("seeder")
    seeder.subscribe(lambda e: seeds.append(e.data) if e.kind == ev.SEED else None)
    st = seeder.seed(community.community_id, community.data_dir, community.raw)
    assert st.state == "idle"
    member = services("member")
    job = member.fetch(community.magnet, tmp_path / "m", Selection("all"), peers=[("127.0.0.1", seeder.listen_port)])
    assert job.wait(WAIT) and job.state == "complete"
    # the member keeps the connection while it seeds what it has: the seeder sees a peer and its upload
    done = threading.Event()
    seeder.subscribe(lambda e: done.set() if e.kind == ev.SEED and e.data["uploaded"] >= job.wanted_bytes else None)
    assert done.wait(10), st.snapshot()
    assert any(s["state"] == "seeding-with-peers" and s["peers"] >= 1 for s in seeds)


def test_newer_torrent_replaces_the_seeded_one(services, tmp_path):
    c = make_community(tmp_path / "c", messages=300, weeks=4, end=1_700_000_000 + 2 * 7 * 86400)
    seeder = services("seeder")
    first = seeder.seed(c.community_id, c.data_dir, c.raw)
    c.rebuild(end=1_700_000_000 + 5 * 7 * 86400)
    second = seeder.seed(c.community_id, c.data_dir, c.raw)
    assert first.infohash != second.infohash
    assert first.state == "stopped" and list(seeder.seeds.values()) == [second]
    assert set(seeder.owners) == {second.infohash}


def test_metadata_timeout_with_retry(services, community, tmp_path):
    member = services("member", metadata_timeout=0.5, metadata_retries=1)
    job = member.fetch(community.magnet, tmp_path / "m", Selection("all"))   # nobody to ask
    assert job.wait(10)
    assert job.state == "error" and job.code == "metadata-timeout" and job.attempts == 2
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").rglob("*"))


def test_disk_full_is_a_clear_error_before_downloading(services, community, tmp_path):
    seeder = services("seeder")
    seeder.seed(community.community_id, community.data_dir, community.raw)
    member = services("member")
    member.free_space = lambda path: 1000
    job = member.fetch(community.magnet, tmp_path / "m", Selection("all"), peers=[("127.0.0.1", seeder.listen_port)])
    assert job.wait(WAIT)
    assert job.state == "error" and job.code == "disk-full"
    assert "disk space" in job.message and job.message.endswith("(+16.0 MiB margin), 1000 B free")
    assert not any(p.is_file() for p in (tmp_path / "m").rglob("*"))
