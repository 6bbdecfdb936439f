"""A download that libtorrent failed keeps no resume data (core/torrent/fetch.py `FetchJob.resume_trusted`): the
error deletes it, and a save that was already under way when the error came is not written (the service's event
dispatch). A piece can pass its hash before its write fails, so such resume data may claim bytes that never reached
the disk (tests/integration/torrent/test_cli.py shows the whole case with a real file-size limit)."""
from __future__ import annotations

from core.torrent import events as ev
from core.torrent.fetch import DOWNLOADING, ERROR, FetchJob
from core.torrent.selection import Selection
from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings

INFOHASH = "ab" * 20


def test_the_error_deletes_the_resume_data_and_a_late_save_is_not_written(tmp_path):
    svc = TorrentService(TorrentSettings.loopback(), tmp_path / "state")     # not started: its dispatch alone
    job = FetchJob(svc, "magnet:?xt=urn:btih:" + INFOHASH, tmp_path / "m", Selection(), community_id="0x02" + "cd" * 32)
    job.infohash, job.state = INFOHASH, DOWNLOADING
    svc.owners[INFOHASH] = job
    saved = svc.resume.resume_path(INFOHASH)

    svc._dispatch(ev.TorrentEvent(ev.RESUME_SAVED, INFOHASH, {"data": b"d4:test1:ae"}))
    assert saved.read_bytes() == b"d4:test1:ae" and job.resume_trusted          # a download under way: kept
    svc._dispatch(ev.TorrentEvent(ev.RESUME_SAVED, INFOHASH, {"data": b"d4:test1:be"}))   # .bak = the first

    svc._dispatch(ev.TorrentEvent(ev.ERROR, INFOHASH, {"code": "file-error", "message": "File too large"}))
    assert job.state == ERROR and not job.resume_trusted
    assert list(saved.parent.iterdir()) == []                                   # the file and its .bak are gone

    svc._dispatch(ev.TorrentEvent(ev.RESUME_SAVED, INFOHASH, {"data": b"d4:test1:ce"}))   # asked before the error
    assert list(saved.parent.iterdir()) == []
