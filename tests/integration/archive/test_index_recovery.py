"""Disk faults during a build: one clear error, nothing half-written, and the next run gives a clean run's bytes.

Faults are injected through core.archive.diskio's seam (the tests run as root, so chmod cannot make a folder
read-only): ENOSPC, EIO and EROFS at each write step of an append and of the torrent, on real files.
"""
import errno
import os
import shutil
from pathlib import Path

import pytest

from core.archive import diskio
from core.archive.build import build_archives, recover_community, torrent_path
from core.archive.cli import register  # noqa: F401  (the CLI under test)
from core.archive.errors import ArchiveError
from core.archive.torrent import parse_metainfo
from core.archive.verify import verify_folder
from core.cli import main
from core.synth import synthesize

WEEK = 7 * 86400
CODES = {errno.ENOSPC: "disk-full", errno.EIO: "io-error", errno.EROFS: "read-only"}


class FaultyDisk(diskio.DiskIO):
    """Raises `err` at the first `op` on a file named `name`; a failing write first writes half its bytes."""

    def __init__(self, op: str, name: str, err: int):
        self.op, self.name, self.err, self.fired = op, name, err, 0

    def _hit(self, op: str, path) -> bool:
        if op == self.op and Path(path).name == self.name and not self.fired:
            self.fired += 1
            return True
        return False

    def _raise(self, path):
        raise OSError(self.err, os.strerror(self.err), str(path))

    def open(self, path, mode):
        if ("w" in mode or "a" in mode) and self._hit("open", path):
            self._raise(path)
        return super().open(path, mode)

    def write(self, f, data):
        if self._hit("write", f.name):
            super().write(f, data[:len(data) // 2])
            f.flush()
            self._raise(f.name)
        super().write(f, data)

    def fsync(self, f):
        if self._hit("fsync", f.name):
            self._raise(f.name)
        super().fsync(f)

    def replace(self, src, dst):
        if self._hit("replace", dst):
            self._raise(dst)
        super().replace(src, dst)

    def unlink(self, path):
        if self._hit("unlink", path):
            self._raise(path)
        super().unlink(path)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    return synthesize(d / "m.sqlite", messages=1500, weeks=4, channels=2, min_payload=2000, max_payload=6000, seed=9)


def _topics(s):
    return [bytes.fromhex(t[2:]) for t in s.topics]


def _build(s, root, end):
    return build_archives(s.path, s.community_id, _topics(s), root / "d", root / "t", end=end)


def _snapshot(s, root):
    files = {}
    for sub in ("d", "t"):
        for p in sorted((root / sub).rglob("*")):
            if p.is_file():
                files[str(p.relative_to(root))] = p.read_bytes()
    return files


@pytest.fixture(scope="module")
def reference(store, tmp_path_factory):
    """Clean builds: after the first half of history, and after all of it."""
    root = tmp_path_factory.mktemp("ref")
    _build(store, root, store.start + 2 * WEEK + 5)
    mid = _snapshot(store, root)
    _build(store, root, store.end)
    return mid, _snapshot(store, root)


def _published(files):
    """data, index and torrent (index.prev may legitimately hold the current index after an undone append)."""
    return {k: v for k, v in files.items() if not k.endswith("index.prev")}


def _restore(root, files):
    for rel, raw in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(raw)


STEPS = [  # (op, file) of every write step of a build, in order
    ("open", "data"),                 # a read-only folder
    ("open", "append.pending.tmp"),
    ("write", "data"),                # the append itself
    ("fsync", "data"),
    ("write", "index.prev.tmp"),
    ("write", "index.tmp"),
    ("fsync", "index.tmp"),
    ("unlink", "append.pending"),
    ("replace", "index"),             # the rename
    ("write", "TORRENT.tmp"),         # the torrent
    ("replace", "TORRENT"),
]


@pytest.mark.parametrize("err", sorted(CODES), ids=lambda e: errno.errorcode[e])
@pytest.mark.parametrize("op,name", STEPS, ids=[f"{o}-{n}" for o, n in STEPS])
def test_fault_at_each_step_of_a_build(store, reference, tmp_path, monkeypatch, op, name, err):
    mid, final = reference
    _restore(tmp_path, mid)
    folder = tmp_path / "d" / store.community_id
    tpath = torrent_path(tmp_path / "t", store.community_id)
    name = name.replace("TORRENT", tpath.name)
    disk = FaultyDisk(op, name, err)
    monkeypatch.setattr(diskio, "disk", disk)
    with pytest.raises(ArchiveError) as e:
        _build(store, tmp_path, store.end)
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert disk.fired == 1
    msg = str(e.value)
    assert e.value.code == CODES[err] and "\n" not in msg and name in msg, msg
    assert not list(tmp_path.rglob("*.tmp")) and not (folder / "append.pending").exists()
    committed = (folder / "index").read_bytes() == final[f"d/{store.community_id}/index"]
    if not committed:  # the append failed: data, index and torrent are exactly as before the build
        assert _published(_snapshot(store, tmp_path)) == _published(mid)
    report = verify_folder(folder, tpath if tpath.exists() else None)
    assert report.ok, report.findings
    if tpath.exists():
        parse_metainfo(tpath.read_bytes())
    # the next run continues and gives exactly the bytes of a clean run
    _build(store, tmp_path, store.end)
    assert _snapshot(store, tmp_path) == final


@pytest.mark.parametrize("op,name", [("write", "data"), ("replace", "index"), ("open", "append.pending.tmp")])
def test_fault_during_the_first_build(store, reference, tmp_path, monkeypatch, op, name):
    mid, final = reference
    monkeypatch.setattr(diskio, "disk", FaultyDisk(op, name, errno.ENOSPC))
    with pytest.raises(ArchiveError) as e:
        _build(store, tmp_path, store.start + 2 * WEEK + 5)
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert e.value.code == "disk-full"
    folder = tmp_path / "d" / store.community_id
    assert not (folder / "index").exists() and (folder / "data").stat().st_size == 0
    assert not list(tmp_path.rglob("*.tmp")) and not (tmp_path / "t").exists()
    _build(store, tmp_path, store.start + 2 * WEEK + 5)
    assert _snapshot(store, tmp_path) == mid


def test_cli_build_on_a_full_disk_exits_2_with_one_line(store, reference, tmp_path, monkeypatch, capsys):
    mid, final = reference
    _restore(tmp_path, mid)
    monkeypatch.setattr(diskio, "disk", FaultyDisk("write", "data", errno.ENOSPC))
    args = ["build", "--db", store.path, "--community-id", store.community_id, "--data-dir", str(tmp_path / "d"),
            "--torrent-dir", str(tmp_path / "t"), "--end", str(store.end)]
    for t in store.topics:
        args += ["--topic", t]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "disk full" in err[0] and str(tmp_path / "d" / store.community_id / "data") in err[0]
    assert _snapshot(store, tmp_path) == mid


def test_failed_cut_back_is_finished_by_the_next_open(store, reference, tmp_path, monkeypatch):
    """Two faults: the append fails and so does cutting its bytes back. append.pending stays, and the next open
    (the control node's start-up) cuts them, proven by it."""
    mid, final = reference
    _restore(tmp_path, mid)

    class AlsoNoTruncate(FaultyDisk):
        def truncate(self, path, size):
            raise OSError(errno.EIO, "Input/output error", str(path))

    monkeypatch.setattr(diskio, "disk", AlsoNoTruncate("write", "index.tmp", errno.ENOSPC))
    with pytest.raises(ArchiveError) as e:
        _build(store, tmp_path, store.end)
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert "could not be cut back" in str(e.value)
    folder = tmp_path / "d" / store.community_id
    assert (folder / "append.pending").exists()
    assert (folder / "data").stat().st_size > len(mid[f"d/{store.community_id}/data"])
    f, rewritten = recover_community(tmp_path / "d", tmp_path / "t", store.community_id)
    assert f.recovered_bytes > 0 and not rewritten
    assert _published(_snapshot(store, tmp_path)) == _published(mid)
    _build(store, tmp_path, store.end)
    assert _snapshot(store, tmp_path) == final


def test_read_only_torrent_dir_keeps_data_and_index(store, reference, tmp_path, monkeypatch):
    """The torrent cannot be written: the archives are saved, no stale torrent is left to seed, and
    recover_community (start-up) writes the torrent that a clean build would have."""
    mid, final = reference
    _restore(tmp_path, mid)
    tpath = torrent_path(tmp_path / "t", store.community_id)
    monkeypatch.setattr(diskio, "disk", FaultyDisk("open", tpath.name + ".tmp", errno.EROFS))
    with pytest.raises(ArchiveError) as e:
        _build(store, tmp_path, store.end)
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert e.value.code == "read-only" and "was removed" in str(e.value)
    assert not tpath.exists()
    _, rewritten = recover_community(tmp_path / "d", tmp_path / "t", store.community_id)
    assert rewritten and _snapshot(store, tmp_path) == final


def test_kept_copy_is_not_the_only_copy(store, reference, tmp_path):
    """index.prev undoes a bad index write by hand without losing the archives appended since."""
    mid, final = reference
    _restore(tmp_path, final)
    folder = tmp_path / "d" / store.community_id
    (folder / "index").write_bytes(b"\x00" * 10)          # a bad write
    shutil.copy(folder / "index.prev", folder / "index")  # undone by hand with the older index
    f, _ = recover_community(tmp_path / "d", tmp_path / "t", store.community_id)
    assert f.rebuilt_index and f.recovered_bytes == 0
    assert _snapshot(store, tmp_path) == final
