"""Which disk errors a person is told are "disk-full" or "read-only": one table (core.archive.diskio.disk_error_code)
for archive folders and downloads. Before, a download knew ENOSPC only (a full quota, EDQUOT, or a too-large file,
EFBIG, were "file-error" there and "disk-full" in a build), and took libtorrent's own error 28 ("invalid file
format tag") for ENOSPC."""
from __future__ import annotations

import errno

import libtorrent as lt
import pytest

from core.archive.diskio import disk_error, disk_error_code
from core.torrent import service


class file_error_alert:        # the alert's type name is what _convert reads; the rest as libtorrent gives it
    def __init__(self, error):
        self.error = error
        self.info_hashes = None
        self.handle = None

    def message(self):
        return "test"


@pytest.mark.parametrize("number, code", [(errno.ENOSPC, "disk-full"), (errno.EDQUOT, "disk-full"),
                                          (errno.EFBIG, "disk-full"), (errno.EROFS, "read-only"),
                                          (errno.EACCES, "read-only"), (errno.EIO, None)])
def test_a_download_and_a_build_name_a_disk_error_alike(number, code, tmp_path):
    assert disk_error_code(number) == code
    assert disk_error(OSError(number, "x"), tmp_path, "writing", "nothing changed").code == (code or "io-error")
    (e,) = service._convert(file_error_alert(lt.error_code(number, lt.system_category())))
    assert e.data["code"] == (code or "file-error")


def test_libtorrents_own_error_numbers_are_not_os_errors():
    (e,) = service._convert(file_error_alert(lt.error_code(errno.ENOSPC, lt.libtorrent_category())))
    assert e.data["code"] == "file-error" and "invalid file format tag" in e.data["message"]


def test_a_build_and_a_download_check_free_space_alike(tmp_path):
    """One free-space check (diskio.check_free_space) with one margin and one way of writing sizes
    (inspect.size_text, the GUI's): before, each had its own copy, and the 16 MiB margin read "17 MB"."""
    from core.archive.build import check_disk_space
    from core.archive.diskio import DISK_MARGIN, check_free_space
    from core.archive.errors import ArchiveError
    from core.archive.inspect import size_text
    from core.torrent.settings import TorrentSettings
    asked = []

    def free(p):
        asked.append(p)
        return 5 * 1024 * 1024
    assert TorrentSettings().disk_margin == DISK_MARGIN == 16 * 1024 * 1024
    for check, what in ((lambda: check_disk_space(tmp_path, 3 * 1024 * 1024, free), "the new archives need"),
                        (lambda: check_free_space(tmp_path / "not" / "yet", 3 * 1024 * 1024, "the download needs",
                                                  free), "the download needs")):
        with pytest.raises(ArchiveError) as e:
            check()
        assert e.value.code == "disk-full"
        assert str(e.value).endswith(f": {what} about 3.0 MiB (+16.0 MiB margin), 5.0 MiB free")
    assert asked == [tmp_path, tmp_path]                # a folder not made yet: its nearest existing parent
    check_free_space(tmp_path, 3 * 1024 * 1024, "x", lambda p: 19 * 1024 * 1024)     # exactly fits
    assert [size_text(n) for n in (None, 0, 1023, 1024, 16 * 1024 * 1024, 3 * 1024 ** 3)] == [
        "", "0 B", "1023 B", "1.0 KiB", "16.0 MiB", "3.0 GiB"]
