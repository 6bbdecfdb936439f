"""build_archives streams archives from the store into the folder, made one ahead by a worker thread: a failure
while reading undoes the append, the worker never outlives the build, and the disk-space check stays exact."""
import threading

import pytest

from core.archive import build
from core.archive.build import ahead, build_archives
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import ArchiveError
from core.storage import waku_messages

WEEK = 7 * 86400


def _encoder_threads():
    return [t for t in threading.enumerate() if t.name == "archive-encoder"]


def test_a_bad_row_mid_build_leaves_the_folder_as_it_was(tmp_path, community):
    s, topics = community
    build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.start + 2 * WEEK)
    folder = tmp_path / "d" / s.community_id
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    con = waku_messages.connect(s.path, create=False)   # a row the reference reading refuses, two windows on
    con.execute("UPDATE waku_messages SET payload = 'text' WHERE rowid = (SELECT rowid FROM waku_messages "
                "WHERE timestamp >= ? ORDER BY timestamp LIMIT 1)", (s.start + 4 * WEEK,))
    con.commit()
    con.close()
    with pytest.raises(TypeError, match="string argument without an encoding"):
        build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before   # data cut back, index and .prev as were
    assert not _encoder_threads()


def test_ahead_passes_items_and_errors_and_stops_its_worker():
    closed = threading.Event()

    def items(fail_at=None):
        try:
            for i in range(100):
                if i == fail_at:
                    raise ValueError(f"item {i} is bad")
                yield i
        finally:
            closed.set()

    assert list(ahead(items())) == list(range(100)) and closed.is_set()
    closed.clear()
    with pytest.raises(ValueError, match="item 7 is bad"):
        list(ahead(items(fail_at=7)))
    assert closed.is_set()
    closed.clear()
    stream = ahead(items(), depth=2)
    assert [next(stream), next(stream)] == [0, 1]
    stream.close()   # the consumer stops early: the worker ends and the source is closed
    assert closed.is_set() and not _encoder_threads()


def test_disk_space_check_sums_the_rows_only_when_the_store_bound_does_not_fit(tmp_path, community, monkeypatch):
    s, topics = community
    con = waku_messages.connect(s.path, create=False)
    count, raw = waku_messages.payload_bytes(con, topics, s.start, s.end)
    stored = waku_messages.stored_bytes(con)
    con.close()
    assert raw + 64 * count < 7 * stored
    summed = []
    real = waku_messages.payload_bytes
    monkeypatch.setattr(waku_messages, "payload_bytes", lambda *a: summed.append(a) or real(*a))
    windows = len(build.plan_build(build.ArchiveFolder(tmp_path / "x", create=True), s.start, s.end).windows)
    exact = raw + 64 * count + PIECE_LENGTH * (windows + 1) + build.DISK_MARGIN

    res = build_archives(s.path, s.community_id, topics, tmp_path / "a", tmp_path / "t", end=s.end,
                         free_space=lambda p: exact)   # below the bound, just enough: summed, then built
    assert res.messages == s.messages and len(summed) == 1
    with pytest.raises(ArchiveError, match="not enough disk space") as e:
        build_archives(s.path, s.community_id, topics, tmp_path / "b", tmp_path / "t", end=s.end,
                       free_space=lambda p: exact - 1)
    assert e.value.code == "disk-full" and not (tmp_path / "b" / s.community_id / "data").exists()
    summed.clear()
    build_archives(s.path, s.community_id, topics, tmp_path / "c", tmp_path / "t", end=s.end,
                   free_space=lambda p: 8 * stored + 10 * PIECE_LENGTH * windows + build.DISK_MARGIN)
    assert summed == []   # the bound fits: no pass over the rows
