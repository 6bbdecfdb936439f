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
