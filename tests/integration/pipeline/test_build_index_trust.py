"""`spark-build` opens the folder through the same ArchiveFolder checks as the reference build (issue 14): a
damaged index is rebuilt from data or refused, never used to cut data; a disk fault while appending leaves the
folder as it was; and the output stays byte-identical to the reference build."""
from __future__ import annotations

import errno

import pytest

from core.archive import diskio
from core.archive.build import build_archives
from core.archive.errors import ArchiveError, CorruptFolder
from core.pipeline.build import submit_build
from core.synth import synthesize

from ..archive.test_index_recovery import FaultyDisk
from .helpers import WEEK, folder_bytes

pytestmark = pytest.mark.spark


@pytest.fixture
def halfway(tmp_path):
    """A store, the reference build of all of it, and a Spark folder built (by the reference path) to mid-way."""
    r = synthesize(tmp_path / "db.sqlite", messages=2000, weeks=4, seed=4)
    topics = [bytes.fromhex(t[2:]) for t in r.topics]
    build_archives(r.path, r.community_id, topics, tmp_path / "ref", tmp_path / "ref-t", end=r.start + 2 * WEEK + 9)
    build_archives(r.path, r.community_id, topics, tmp_path / "spark", tmp_path / "spark-t",
                   end=r.start + 2 * WEEK + 9)
    build_archives(r.path, r.community_id, topics, tmp_path / "ref", tmp_path / "ref-t", end=r.end)
    return r, topics, tmp_path / "spark" / r.community_id


def _spark(owner, tmp_path, r, topics):
    return submit_build(owner, r.path, r.community_id, topics, tmp_path / "spark", tmp_path / "spark-t",
                        end=r.end).result(300)


def test_spark_build_rebuilds_an_empty_index_and_matches_the_reference(spark_owner, tmp_path, halfway):
    r, topics, folder = halfway
    data = (folder / "data").read_bytes()
    (folder / "index").write_bytes(b"")
    res = _spark(spark_owner, tmp_path, r, topics)
    assert res.rebuilt_index and "rebuilt the index from data" in res.rebuilt_index
    assert (folder / "data").read_bytes()[:len(data)] == data
    assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
    assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")


def test_spark_build_refuses_an_unexplained_index(spark_owner, tmp_path, halfway):
    r, topics, folder = halfway
    with open(folder / "data", "r+b") as f:  # data lost its last piece: the index names bytes it does not hold
        f.truncate((folder / "data").stat().st_size - 102400)
    before = folder_bytes(folder)
    with pytest.raises(CorruptFolder) as e:
        _spark(spark_owner, tmp_path, r, topics)
    assert str(folder) in str(e.value) and "\n" not in str(e.value)
    assert folder_bytes(folder) == before


def test_spark_build_disk_full_leaves_the_folder_and_reruns_identically(spark_owner, tmp_path, halfway,
                                                                        monkeypatch):
    r, topics, folder = halfway
    before = folder_bytes(folder)
    monkeypatch.setattr(diskio, "disk", FaultyDisk("write", "data", errno.ENOSPC))
    with pytest.raises(ArchiveError) as e:
        _spark(spark_owner, tmp_path, r, topics)
    monkeypatch.setattr(diskio, "disk", diskio.DiskIO())
    assert e.value.code == "disk-full" and str(folder / "data") in str(e.value)
    assert folder_bytes(folder) == before and not list(tmp_path.glob("spark/.spark-spool-*"))
    _spark(spark_owner, tmp_path, r, topics)
    assert folder_bytes(tmp_path / "spark") == folder_bytes(tmp_path / "ref")
    assert folder_bytes(tmp_path / "spark-t") == folder_bytes(tmp_path / "ref-t")
