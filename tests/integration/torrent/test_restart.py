"""A newer magnet cancels the running download; a member killed mid-download resumes after a restart."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from core.torrent import events as ev
from core.torrent.selection import Selection
from tests.integration.torrent.support import make_community

WEEK = 7 * 86400
T0 = 1_700_000_000


def test_newer_magnet_cancels_and_restarts(services, tmp_path):
    c = make_community(tmp_path / "c", messages=800, weeks=5, end=T0 + 3 * WEEK)
    seeder = services("seeder", upload_rate_limit=400_000)
    seeder.seed(c.community_id, c.data_dir, c.raw)
    old_magnet = c.magnet
    member = services("member")
    jobs: list[dict] = []
    first_data_piece = threading.Event()
    index_start = c.metainfo.file_length("data") // 102400

    def on_event(e):
        if e.kind == ev.JOB:
            jobs.append(e.data)
        if e.kind == ev.PIECE_FINISHED and e.infohash == c.metainfo.infohash and e.data["piece"] < index_start:
            first_data_piece.set()
    member.subscribe(on_event)
    peers = [("127.0.0.1", seeder.listen_port)]
    job1 = member.fetch(old_magnet, tmp_path / "m", Selection("all"), peers=peers)
    assert first_data_piece.wait(30), job1.snapshot()
    assert job1.state == "downloading"
    # the control node's weekly tick: more archives, a new torrent; the member gets the newer magnet
    c.rebuild(end=T0 + 6 * WEEK)
    seeder.seed(c.community_id, c.data_dir, c.raw)
    assert c.magnet != old_magnet
    job2 = member.fetch(c.magnet, tmp_path / "m", Selection("all"), peers=peers)
    assert job1.state == "cancelled" and "superseded" in job1.message
    seeder.set_upload_rate_limit(0)       # job1 was stopped mid-way: the rest at full speed
    assert job2.wait(60) and job2.state == "complete", job2.snapshot()
    got = tmp_path / "m" / c.community_id
    assert (got / "data").read_bytes() == (c.folder / "data").read_bytes()
    assert (got / "index").read_bytes() == (c.folder / "index").read_bytes()
    assert member.jobs == {c.community_id: job2}
    assert set(member.owners) == {job2.infohash}
    states = [(j["infohash"], j["state"]) for j in jobs]
    assert states.index((job1.infohash, "cancelled")) < states.index((job2.infohash, "complete"))


def _run_fetch(magnet, port, data_dir):
    cmd = [sys.executable, "-m", "core.cli", "fetch", magnet, "--local", "--peer", f"127.0.0.1:{port}",
           "--data-dir", str(data_dir), "--json", "--timeout", "60"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))


def test_member_killed_mid_download_resumes(services, community, tmp_path):
    seeder = services("seeder", upload_rate_limit=700_000)
    seeder.seed(community.community_id, community.data_dir, community.raw)
    proc = _run_fetch(community.magnet, seeder.listen_port, tmp_path / "m")
    killed_at = None
    try:
        for line in proc.stdout:
            d = json.loads(line)
            if d.get("state") == "downloading" and d["have_wanted_pieces"] >= d["wanted_pieces"] // 3:
                killed_at = d
                os.kill(proc.pid, signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    assert killed_at is not None and killed_at["have_wanted_pieces"] < killed_at["wanted_pieces"]
    assert (tmp_path / "m" / ".torrent-state" / "running.marker").exists()   # no clean shutdown
    seeder.set_upload_rate_limit(0)       # killed mid-way: the rest at full speed
    proc = _run_fetch(community.magnet, seeder.listen_port, tmp_path / "m")
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    done = json.loads(out.strip().splitlines()[-1])
    assert done["state"] == "complete" and done["resumed"] and done["rechecked"]
    # it continued: what was on disk before the kill was not fetched again
    assert done["downloaded"] <= done["wanted_bytes"] - (killed_at["have_wanted_pieces"] - 4) * 102400
    got = tmp_path / "m" / community.community_id
    assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()
    assert (got / "index").read_bytes() == (community.folder / "index").read_bytes()
    assert not (tmp_path / "m" / ".torrent-state" / "running.marker").exists()


def test_clean_shutdown_then_resume_jobs_continues(services, community, tmp_path):
    seeder = services("seeder", upload_rate_limit=700_000)
    seeder.seed(community.community_id, community.data_dir, community.raw)
    member = services("member", resume_interval=0.5)
    some = threading.Event()
    member.subscribe(lambda e: some.set() if e.kind == ev.JOB and e.data["state"] == "downloading"
                     and e.data["have_wanted_pieces"] >= e.data["wanted_pieces"] // 3 else None)
    job = member.fetch(community.magnet, tmp_path / "m", Selection("all"), peers=[("127.0.0.1", seeder.listen_port)])
    assert some.wait(30), job.snapshot()
    had = len(job.have)
    member.close()                                    # saves resume data, removes the marker
    assert job.state != "complete"
    seeder.set_upload_rate_limit(0)       # stopped mid-way: the rest at full speed
    again = services("member")                        # same state folder
    assert not again.unclean_previous
    (job2,) = again.resume_jobs()
    assert job2.resumed and not job2.rechecked
    assert job2.wait(60) and job2.state == "complete", job2.snapshot()
    assert job2.downloaded <= job2.wanted_bytes - (had - 2) * 102400
    got = tmp_path / "m" / community.community_id
    assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()


def test_upload_limit_changes_for_every_seed_now_and_later(services, community, tmp_path):
    seeder = services("seeder", upload_rate_limit=400_000)
    first = seeder.seed(community.community_id, community.data_dir, community.raw)
    assert seeder.call(first.handle.upload_limit).result(10) == 400_000
    seeder.set_upload_rate_limit(0)
    assert seeder.call(first.handle.upload_limit).result(10) <= 0        # libtorrent: -1 or 0, unlimited
    seeder.set_upload_rate_limit(123_000)
    assert seeder.call(first.handle.upload_limit).result(10) == 123_000
    c = make_community(tmp_path / "c2", messages=50, weeks=2)
    later = seeder.seed(c.community_id, c.data_dir, c.raw)
    assert seeder.call(later.handle.upload_limit).result(10) == 123_000
    with pytest.raises(ValueError, match="an upload limit is 0 .none. or more bytes/s, not -5"):
        seeder.set_upload_rate_limit(-5)
    assert seeder.settings.upload_rate_limit == 123_000


def test_port_in_use_falls_back_to_another_port(services):
    import socket
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        s = services("second", listen_port=port)
        assert s.listen_port not in (0, port)


def test_unreachable_seeder_says_so(services, community):
    states = []
    changed = threading.Event()

    def on(e):
        if e.kind == ev.SEED:
            states.append(e.data["state"])
            if e.data["state"] == "not-reachable":
                changed.set()
    seeder = services("seeder", listen_host="192.0.2.1")      # TEST-NET-1: not an address of this machine
    seeder.subscribe(on)
    seeder.seed(community.community_id, community.data_dir, community.raw)
    assert changed.wait(10), (states, seeder.listen_ok)
    assert seeder.listen_ok is False
