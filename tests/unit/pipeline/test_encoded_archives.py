"""The driver's side of a Spark build without a JVM: spooled archives handed to the folder as file maps, in
(window, chunk) order, give the bytes of the same archives given as bytes; a cancel between archives undoes the
append; an error row is refused before anything is appended."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.archive import codec
from core.archive.folder import ArchiveFolder, NewArchive
from core.pipeline.encode import ENCODED_NAMES, write_spool
from core.pipeline.session import JobCancelled
from core.pipeline.spark_encode import EncodedArchives, PipelineError
from tests.integration.pipeline.helpers import T0, TOPICS, WEEK, folder_bytes, msg


def _archives() -> list[tuple[int, int, int, bytes, int]]:
    """(window, chunk, start, raw, messages): three windows, the second cut into two chunks."""
    out = []
    for w, chunks in enumerate(([40], [30, 25], [10])):
        lo = T0 + w * WEEK
        for c, n in enumerate(chunks):
            ms = [msg(lo + c * 1000 + i, bytes([w, c, i % 256]) * (50 + i)) for i in range(n)]
            out.append((w, c, lo, codec.encode_archive(lo, lo + WEEK, TOPICS, ms), n))
    return out


def _rows(spool: Path) -> list[dict]:
    rows = [dict(zip(ENCODED_NAMES, (w, c, lo, lo + WEEK, n, b"", None, write_spool(str(spool), w, c, raw))))
            for w, c, lo, raw, n in _archives()]
    return rows[::-1]   # collect() gives no order


def test_spooled_archives_append_the_same_bytes_in_archive_order(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    produced = EncodedArchives(_rows(spool), TOPICS)
    assert produced.messages == 40 + 30 + 25 + 10
    ArchiveFolder(tmp_path / "spark", create=True).append(produced)
    ArchiveFolder(tmp_path / "ref", create=True).append(
        [NewArchive(lo, lo + WEEK, tuple(TOPICS), raw) for _, _, lo, raw, _ in _archives()])
    assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
    assert len(ArchiveFolder(tmp_path / "spark").entries) == 4


def test_a_cancel_between_archives_leaves_the_folder_as_it_was(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    folder = ArchiveFolder(tmp_path / "d", create=True)
    first = _archives()[0]
    folder.append([NewArchive(first[2] - WEEK, first[2], tuple(TOPICS), first[3])])
    before = folder_bytes(tmp_path / "d")
    handed = []

    def check():
        handed.append(1)
        if len(handed) == 3:   # two archives are already in `data`
            raise JobCancelled("build cancelled")
    with pytest.raises(JobCancelled):
        folder.append(EncodedArchives(_rows(spool), TOPICS, check))
    assert len(handed) == 3
    assert folder_bytes(tmp_path / "d") == before
    assert len(ArchiveFolder(tmp_path / "d").entries) == 1


def test_an_error_row_is_refused_before_anything_is_appended(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    rows = _rows(spool)
    rows[1] = {**rows[1], "error": "ValueError: boom", "spool": None}
    with pytest.raises(PipelineError, match=r"window \[\d+, \d+\) chunk 1 failed: ValueError: boom") as e:
        EncodedArchives(rows, TOPICS)
    assert e.value.code == "encode-failed"
