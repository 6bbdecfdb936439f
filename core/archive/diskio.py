"""The writes of an archive folder and its torrent, through one seam.

Every write, fsync, rename and truncation of `core.archive.folder` and of the build goes through `disk` (a DiskIO),
looked up at call time: tests swap it for one that raises ENOSPC, EIO or EROFS at a chosen step (the process runs
as root in CI, so permissions cannot make a folder read-only). `disk_error` turns the OSError into the one-line
ArchiveError people see.
"""
from __future__ import annotations

import errno
import os
import secrets
import shutil
from pathlib import Path
from typing import BinaryIO, Callable

from core.archive.errors import ArchiveError


class DiskIO:
    """The real file system."""

    def open(self, path: Path, mode: str) -> BinaryIO:
        return open(path, mode)

    def write(self, f: BinaryIO, data: bytes) -> None:
        f.write(data)

    def fsync(self, f: BinaryIO) -> None:
        f.flush()
        os.fsync(f.fileno())

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def unlink(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def truncate(self, path: Path, size: int) -> None:
        with open(path, "r+b") as f:
            f.truncate(size)
            f.flush()
            os.fsync(f.fileno())

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


disk = DiskIO()


def fsync_dir(path: Path) -> None:
    disk.fsync_dir(Path(path))


def tmp_path_of(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def write_tmp(path: Path, data: bytes) -> Path:
    """Write `data` to `<path>.tmp` and fsync it; on failure remove the tmp file and re-raise."""
    tmp = tmp_path_of(path)
    try:
        with disk.open(tmp, "wb") as f:
            disk.write(f, data)
            disk.fsync(f)
    except BaseException:
        discard(tmp)
        raise
    return tmp


def commit_tmp(tmp: Path, path: Path) -> None:
    """Rename a fsynced tmp file over `path` (atomic), then fsync the folder so the rename is durable."""
    try:
        disk.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise
    disk.fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new file, never a mix, and a
    failure leaves the old file and no tmp file. Raises OSError (callers name the step)."""
    path = Path(path)
    commit_tmp(write_tmp(path, data), path)


def discard(path: Path) -> None:
    """Best-effort removal (clean-up on an error path: the original error is what the caller reports)."""
    try:
        disk.unlink(path)
    except OSError:
        pass


_CODES = {errno.ENOSPC: "disk-full", errno.EDQUOT: "disk-full", errno.EFBIG: "disk-full",
          errno.EROFS: "read-only", errno.EACCES: "read-only", errno.EPERM: "read-only"}
_WHAT = {"disk-full": "disk full", "read-only": "not writable (read-only)", "io-error": "I/O error"}


DISK_MARGIN = 16 * 1024 * 1024      # free space kept on top of what a build or a download needs


def free_bytes(folder: Path | str, free_space: Callable[[Path], int] | None = None) -> int:
    """Free bytes where `folder` is, or would be (its nearest existing parent); `free_space` replaces the OS's
    answer in tests."""
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return (free_space or (lambda p: shutil.disk_usage(p).free))(probe)


def check_free_space(folder: Path | str, need: int, what: str, free_space: Callable[[Path], int] | None = None,
                     margin: int = DISK_MARGIN) -> None:
    """Refuse (ArchiveError disk-full) before anything is written when `need` bytes plus `margin` do not fit in the
    free space of `folder`, or of its nearest existing parent: the one check of builds and downloads. `what`
    begins the sentence's middle ("the download needs")."""
    free = free_bytes(folder, free_space)
    if free < need + margin:
        from core.archive.inspect import size_text
        raise ArchiveError(f"not enough disk space in {folder}: {what} about {size_text(need)} "
                           f"(+{size_text(margin)} margin), {size_text(free)} free", code="disk-full")


def disk_error_code(number: int | None) -> str | None:
    """The code of an OS error number that a person can act on ("disk-full", "read-only"), else None: the one rule
    for archive folders (disk_error) and downloads (core.torrent.service)."""
    return _CODES.get(number)


def disk_error(e: OSError, path: Path | str, doing: str, outcome: str) -> ArchiveError:
    """One line: what failed, where (the file the OS names, else `path`), and the state it left (`outcome`)."""
    path = e.filename or path
    code = disk_error_code(e.errno) or "io-error"
    reason = (e.strerror or str(e) or type(e).__name__).replace("\n", " ")
    err = ArchiveError(f"{_WHAT[code]} while {doing} {path} ({reason}); {outcome}", code=code)
    err.errno = e.errno
    err.path = str(path)
    return err


def write_private_file(path: Path | str, data: bytes) -> Path:
    """Atomically write a file created with mode 0600 (never briefly readable by others), fsynced: the one way a
    secret is written (community key files, group keys, the Waku node key). Not through `disk`: a secret is not
    part of an archive folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
