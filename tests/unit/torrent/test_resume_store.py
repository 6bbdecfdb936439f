import libtorrent as lt
from hypothesis import given, settings, strategies as st

from core.torrent.resume import ResumeStore, ShutdownMarker, read_with_backup, write_with_backup


def _resume_bytes(name="x") -> bytes:
    atp = lt.parse_magnet_uri("magnet:?xt=urn:btih:" + "ab" * 20 + f"&dn={name}")
    atp.save_path = "/nonexistent"
    return bytes(lt.write_resume_data_buf(atp))


def test_write_keeps_previous_copy_as_bak(tmp_path):
    p = tmp_path / "f"
    write_with_backup(p, b"one")
    write_with_backup(p, b"two")
    assert p.read_bytes() == b"two" and (tmp_path / "f.bak").read_bytes() == b"one"
    assert not (tmp_path / "f.tmp").exists()


def test_torn_resume_file_falls_back_to_bak(tmp_path):
    store = ResumeStore(tmp_path)
    good = _resume_bytes()
    store.save_resume("ab" * 20, good)
    store.save_resume("ab" * 20, good)
    store.resume_path("ab" * 20).write_bytes(good[: len(good) // 2])     # a crash mid-write of a foreign tool
    assert store.load_resume("ab" * 20) == good
    store.delete_resume("ab" * 20)
    assert store.load_resume("ab" * 20) is None


def test_jobs_round_trip(tmp_path):
    store = ResumeStore(tmp_path)
    store.save_job("0xaa", {"magnet": "m", "state": "index"})
    store.save_job("0xaa", {"magnet": "m", "state": "complete"})
    assert store.load_job("0xaa")["state"] == "complete"
    store.job_path("0xaa").write_bytes(b"{broken")
    assert store.load_job("0xaa")["state"] == "index"       # the .bak copy
    assert [j["magnet"] for j in store.jobs()] == ["m"]


def test_marker_tells_crash_from_clean_shutdown(tmp_path):
    m = ShutdownMarker(tmp_path / "running.marker")
    assert m.acquire() is False
    assert ShutdownMarker(tmp_path / "running.marker").acquire() is True     # never released: a crash
    m.release()
    assert ShutdownMarker(tmp_path / "running.marker").acquire() is False


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2048))
def test_junk_resume_data_is_ignored(tmp_path_factory, junk):
    store = ResumeStore(tmp_path_factory.mktemp("r"))
    store.resume_path("cd" * 20).parent.mkdir(parents=True, exist_ok=True)
    store.resume_path("cd" * 20).write_bytes(junk)
    got = store.load_resume("cd" * 20)
    assert got is None or got == junk
    assert read_with_backup(tmp_path_factory.mktemp("n") / "missing") is None
