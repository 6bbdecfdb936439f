"""Regression: a member that crashed after its download finished (e.g. while importing) restarts the fetch;
everything is already on disk, so the job must complete at once without receiving a byte."""
from core.archive.build import build_archives
from core.synth import synthesize
from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings


def test_fetch_completes_when_everything_is_already_on_disk(tmp_path):
    s = synthesize(tmp_path / "m.sqlite", messages=3000, weeks=4, seed=3)
    res = build_archives(s.path, s.community_id, [bytes.fromhex(t[2:]) for t in s.topics], tmp_path / "c",
                         tmp_path / "t", end=s.end)
    seed = TorrentService(TorrentSettings.loopback(), tmp_path / "cs").start()
    try:
        seed.seed(s.community_id, tmp_path / "c", res.torrent_path)
        peers = [("127.0.0.1", seed.listen_port)]
        first = TorrentService(TorrentSettings.loopback(), tmp_path / "ms").start()
        job = first.fetch(res.magnet, tmp_path / "m", community_id=s.community_id, peers=peers)
        assert job.wait(60) and job.snapshot()["state"] == "complete"
        first.close()
        (tmp_path / "ms" / "running.marker").write_text("crashed")   # as if killed: unclean shutdown
        second = TorrentService(TorrentSettings.loopback(), tmp_path / "ms").start()
        try:
            assert second.unclean_previous
            job2 = second.fetch(res.magnet, tmp_path / "m", community_id=s.community_id, peers=peers)
            assert job2.wait(30), job2.snapshot()
            snap = job2.snapshot()
            assert snap["state"] == "complete" and snap["downloaded"] == 0
        finally:
            second.close()
    finally:
        seed.close()
