"""A failed append of the archive folder (core/archive/folder.py, steps 1-6 of its module doc): each step names
what it was doing, the append is undone (or, past step 5, left for the next open to finish), pinned against the
survivors of `make mutation` (docs/QUALITY.md). Faults come through core.archive.diskio's seam, as in
tests/integration/archive/test_index_recovery.py."""
from __future__ import annotations

import errno

import pytest

from core.archive import diskio
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.archive.folder import ArchiveFolder

from .test_folder_mutants import arch, made


class Faulty(diskio.DiskIO):
    def __init__(self, op, name, err=errno.ENOSPC):
        self.op, self.name, self.err = op, name, err

    def _hit(self, op, path):
        if op == self.op and str(path).endswith("/" + self.name):
            raise OSError(self.err, "boom", str(path))

    def open(self, path, mode):
        self._hit("open", path)
        return super().open(path, mode)

    def replace(self, src, dst):
        self._hit("replace", dst)
        return super().replace(src, dst)

    def unlink(self, path):
        self._hit("unlink", path)
        return super().unlink(path)

    def truncate(self, path, size):
        self._hit("truncate", path)
        return super().truncate(path, size)

    def fsync_dir(self, path):
        self._hit("fsync_dir", str(path) + "/.")
        return super().fsync_dir(path)


def test_failed_append_is_undone(tmp_path, monkeypatch):
    f, ids = made(tmp_path)
    before = (f.data_path.read_bytes(), f.index_path.read_bytes())
    monkeypatch.setattr(diskio, "disk", Faulty("replace", "index"))
    with pytest.raises(ArchiveError) as e:
        f.append([arch(2)])
    assert e.value.code == "disk-full"
    assert str(e.value) == (f"disk full while replacing {f.index_path} (boom); the append was undone: data, index and "
                            "torrent are as they were before this build")
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert (f.data_path.read_bytes(), f.index_path.read_bytes()) == before and list(f.entries) == ids
    assert not f.pending_path.exists() and not (f.path / "index.tmp").exists()


@pytest.mark.parametrize("op,name,doing", [("open", "data", "opening for appending"),
                                           ("open", "append.pending.tmp", "recording the append in"),
                                           ("open", "index.prev.tmp", "keeping the previous index as"),
                                           ("open", "index.tmp", "writing the new index to"),
                                           ("unlink", "append.pending", "removing")])
def test_each_step_names_what_it_was_doing(tmp_path, monkeypatch, op, name, doing):
    f, ids = made(tmp_path)
    monkeypatch.setattr(diskio, "disk", Faulty(op, name, errno.EIO))
    with pytest.raises(ArchiveError) as e:
        f.append([arch(2)])
    assert str(e.value).startswith(f"I/O error while {doing} ") and e.value.code == "io-error"
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert f.data_path.stat().st_size == 2 * PIECE_LENGTH and list(ArchiveFolder(f.path).entries) == ids


def test_undo_that_cannot_cut_says_so(tmp_path, monkeypatch):
    f, ids = made(tmp_path)

    class Both(Faulty):
        def replace(self, src, dst):
            if str(dst).endswith("/index"):
                raise OSError(errno.EIO, "boom", str(dst))
            return super().replace(src, dst)
    monkeypatch.setattr(diskio, "disk", Both("truncate", "data"))
    with pytest.raises(ArchiveError) as e:
        f.append([arch(2)])
    assert str(e.value).endswith("; the appended bytes could not be cut back yet; they are not indexed, and the next "
                                 "open of the folder cuts them")
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    g = ArchiveFolder(f.path)               # past step 5: the complete index.tmp is the commit that missed its rename
    assert len(g.entries) == 3 and list(g.entries)[:2] == ids
    assert g.rebuilt_index == "found the index of a finished append that a crash kept from its final rename"


def test_undo_refuses_when_the_index_changed(tmp_path):
    f, ids = made(tmp_path)
    size = f.data_path.stat().st_size
    with open(f.data_path, "ab") as h:
        h.write(b"x" * 10)
    assert f._undo_append(size, b"other") is False and f.data_path.stat().st_size == size + 10
    assert f._undo_append(size, f.index_path.read_bytes()) is True and f.data_path.stat().st_size == size
    assert f._undo_append(size, f.index_path.read_bytes()) is True      # nothing past offset: no truncate
    g = ArchiveFolder(tmp_path / "new", create=True)
    assert g._undo_append(0, None) is True


def test_final_folder_sync_failure_keeps_the_new_index(tmp_path, monkeypatch):
    f, ids = made(tmp_path)
    calls = []

    class LastSync(diskio.DiskIO):
        def fsync_dir(self, path):
            calls.append(path)
            if len(calls) >= 4:                                 # prev, tmp, step 5 done; the final one fails
                raise OSError(errno.EIO, "boom")                # no file name: the message names the folder
            return super().fsync_dir(path)
    monkeypatch.setattr(diskio, "disk", LastSync())
    with pytest.raises(ArchiveError) as e:
        f.append([arch(2)])
    assert str(e.value) == (f"I/O error while syncing the folder {f.path} (boom); the new index is in place but may "
                            "not survive a power loss")
    assert len(f.entries) == 3 and f._index_raw == f.index_path.read_bytes()


def test_an_exception_that_is_not_oserror_is_reraised_after_undo(tmp_path, monkeypatch):
    f, ids = made(tmp_path)

    class Stop(diskio.DiskIO):
        def replace(self, src, dst):
            if str(dst).endswith("/index"):
                raise KeyboardInterrupt
            return super().replace(src, dst)
    monkeypatch.setattr(diskio, "disk", Stop())
    with pytest.raises(KeyboardInterrupt):
        f.append([arch(2)])
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert f.data_path.stat().st_size == 2 * PIECE_LENGTH and list(f.entries) == ids


class FullOnWrite(diskio.DiskIO):
    """write() to `data` fails as on a full disk: an OSError without a file name, after `allow` writes went through;
    with `stuck`, cutting the data back fails too."""

    def __init__(self, allow=0, stuck=False):
        self.allow, self.stuck = allow, stuck

    def write(self, f, data):
        if str(f.name).endswith("/data"):
            if self.allow <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.allow -= 1
        return super().write(f, data)

    def truncate(self, path, size):
        if self.stuck:
            raise OSError(errno.EIO, "boom", str(path))
        return super().truncate(path, size)


def test_a_full_disk_while_writing_data_names_the_data_file(tmp_path, monkeypatch):
    f, ids = made(tmp_path)
    monkeypatch.setattr(diskio, "disk", FullOnWrite())
    with pytest.raises(ArchiveError) as e:
        f.append([arch(2)])
    assert str(e.value) == (f"disk full while appending archives to {f.data_path} (No space left on device); the "
                            "append was undone: data, index and torrent are as they were before this build")
    assert e.value.code == "disk-full" and not f.pending_path.exists()


def test_append_pending_holds_the_offset_the_next_open_cuts_to(tmp_path, monkeypatch):
    f, ids = made(tmp_path)
    monkeypatch.setattr(diskio, "disk", FullOnWrite(allow=1, stuck=True))   # the archive went in, its padding not
    with pytest.raises(ArchiveError) as e:
        f.append([arch(2)])
    assert str(e.value).endswith("; the appended bytes could not be cut back yet; they are not indexed, and the next "
                                 "open of the folder cuts them")
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    grown = f.data_path.stat().st_size - 2 * PIECE_LENGTH
    assert grown > 0 and f.pending_path.read_bytes() == str(2 * PIECE_LENGTH).encode()
    g = ArchiveFolder(f.path)
    assert g.recovered_bytes == grown and list(g.entries) == ids and f.data_path.stat().st_size == 2 * PIECE_LENGTH
