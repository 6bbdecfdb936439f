"""The importer's first pass (core/history_import.py: read_window_preview, RowPool.preview and its workers), each
rule pinned by a test that fails when it changes (written against the survivors and the untested mutants of the
2026-11-27 mutation run, docs/QUALITY.md). Real signed Status messages in a real `data` file, real worker processes."""
from __future__ import annotations

import hashlib
import os
import signal

import pytest
from coincurve import PrivateKey

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.errors import ArchiveError
from core.history_import import RowPool, WindowImport, preview_archives, read_window_preview, read_window_rows
from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
from core.status.chat_message import encode_chat_message

CID = "0x02" + "cd" * 32
TOPIC = b"\x01\x02\x03\x04"
T = 1_700_000_000
W = 7 * 86400
AUTHOR = PrivateKey(hashlib.sha256(b"preview author").digest())
AUTHOR_KEY = AUTHOR.public_key.format(compressed=False)          # what coincurve says, not the code under test


def _message(i: int) -> ArchiveMessage:
    """i % 3: 0 a signed chat message, 1 an unsigned one, 2 a payload that is not a Status message; every other
    message carries an envelope signer."""
    chat = encode_chat_message(f"text {i}", "chat-x", i + 1, (T + i) * 1000)
    payload = (wrap_public(wrap_application(chat, CHAT_MESSAGE, AUTHOR), "inst") if i % 3 == 0 else
               wrap_public(wrap_application(chat, CHAT_MESSAGE, None), "inst") if i % 3 == 1 else b"raw %d" % i)
    return ArchiveMessage(b"envelope-%d" % i if i % 2 else b"", T + i, TOPIC, payload,
                          hash=hashlib.sha256(b"m%d" % i).digest())


def _data(tmp_path, archives, seal=lambda raw: raw):
    """A `data` file with one archive per (start, end, messages), each sealed by `seal`; its index."""
    blob, index = b"", {}
    for start, end, ms in archives:
        raw = seal(codec.encode_archive(start, end, [TOPIC], ms))
        size, pad = codec.padded_size(len(raw))
        e = IndexEntry(start, end, (TOPIC,), len(blob), size, pad)
        index[e.archive_id] = e
        blob += raw + b"\0" * pad
    (tmp_path / "data").write_bytes(blob)
    return tmp_path / "data", index


def _xor(raw: bytes) -> bytes:
    return bytes(b ^ 0x5A for b in raw)


@pytest.fixture
def window(tmp_path):
    """Another window's archive first (so the window's archives are not at offset 0), then the window's two chunks."""
    ms = [_message(i) for i in range(12)]
    before = ArchiveMessage(b"", T - 100, TOPIC, b"an older window", hash=b"\1" * 32)
    path, index = _data(tmp_path, [(T - W, T, [before]), (T, T + W, ms[:7]), (T, T + W, ms[7:])])
    _, a1, a2 = list(index)
    return path, index, ms, a1, a2


def _author_left_out(rows, reference, ms):
    """The preview rows are the reference rows (read_window_rows) but for the author of each signed message, which
    is the envelope signer (or None) until finish_authors fills it in."""
    by_hash = {m.hash: m for m in ms}
    assert len(rows) == len(reference)
    for got, want in zip(rows, reference, strict=True):
        signed = want[4] == AUTHOR_KEY
        assert got[:4] + got[5:] == want[:4] + want[5:]
        assert got[4] == ((by_hash[got[1]].sig or None) if signed else want[4])


def test_read_window_preview_gives_the_reference_rows_without_the_pending_authors(window):
    path, index, ms, a1, a2 = window
    w = WindowImport(T, T + W, (a1, a2))
    rows, pending = read_window_preview(path, CID, index, w)
    reference = read_window_rows(path, CID, index, w)
    assert [r[1] for r in reference] == [m.hash for m in ms]
    assert [(r[0], r[11]) for r in rows] == [(CID, a1)] * 7 + [(CID, a2)] * 5
    assert [r[9] for r in rows] == [f"text {i}" if i % 3 != 2 else None for i in range(12)]
    _author_left_out(rows, reference, ms)
    assert pending == [m.hash for i, m in enumerate(ms) if i % 3 == 0]        # the signed ones, in order
    # the window's archives are read in the order given
    rows, _ = read_window_preview(path, CID, index, WindowImport(T, T + W, (a2, a1)))
    assert [r[1] for r in rows] == [m.hash for m in ms[7:] + ms[:7]]


def test_read_window_preview_in_a_worker_gives_the_same_rows(window):
    path, index, ms, a1, a2 = window
    w = WindowImport(T, T + W, (a1, a2))
    want = read_window_preview(path, CID, index, w)
    pool = RowPool(workers=2)
    pool.PREVIEW_MIN_BYTES = 1
    try:
        assert read_window_preview(path, CID, index, w, pool=pool) == want
        assert pool._pool is not None and not pool.broken                    # a worker did it
    finally:
        pool.shutdown()


def test_read_window_preview_opens_encrypted_archives_and_names_a_damaged_one(tmp_path):
    ms = [_message(i) for i in range(6)]
    path, index = _data(tmp_path, [(T, T + W, ms[:3]), (T, T + W, ms[3:])], seal=_xor)
    a1, a2 = list(index)
    w = WindowImport(T, T + W, (a1, a2))
    rows, pending = read_window_preview(path, CID, index, w, _xor)
    assert [r[1] for r in rows] == [m.hash for m in ms] and pending == [ms[0].hash, ms[3].hash]
    _author_left_out(rows, read_window_rows(path, CID, index, w, _xor), ms)
    with pytest.raises(ArchiveError) as ei:                                      # not opened: does not decode
        read_window_preview(path, CID, index, w)
    assert (ei.value.code, ei.value.archive_id) == ("archive-undecodable", a1)
    path.write_bytes(path.read_bytes()[:index[a2].offset + 5])                  # the second one cut short
    with pytest.raises(ArchiveError) as ei:
        read_window_preview(path, CID, index, w, _xor)
    assert (ei.value.code, ei.value.archive_id) == ("archive-incomplete", a2)
    assert str(ei.value) == f"archive {a2} is not fully downloaded: data holds 5 of its {index[a2].size} bytes"


def test_the_archive_read_in_two_parts_gets_open_blobs_answer_on_damaged_data(tmp_path):
    """read_window_preview reads an archive and its padding apart (no copy to cut the padding off): on every kind of
    damage it raises what open_blob raises on the same bytes read whole, message for message."""
    import dataclasses
    from core.history_import import open_blob
    ms = [_message(i) for i in range(5)]
    path, index = _data(tmp_path, [(T, T + W, ms)])
    (aid, e), = index.items()
    good = path.read_bytes()
    raw_len = e.size - e.padding
    cases = {
        "as is": (good, e),
        "cut in the archive": (good[:raw_len - 3], e),
        "cut in the padding": (good[:raw_len + 7], e),
        "padding not zeros": (good[:-1] + b"\1", e),
        "first padding byte": (good[:raw_len] + b"\7" + good[raw_len + 1:], e),
        "all zeros": (bytes(len(good)), e),
        "zeros then data": (b"\0" * 4 + good[4:], e),
        "padding over size": (good, dataclasses.replace(e, padding=e.size + 1)),
        "no padding said": (good, dataclasses.replace(e, padding=0)),
        "negative padding": (good, dataclasses.replace(e, padding=-2)),
    }
    seen = set()
    for name, (data, entry) in cases.items():
        path.write_bytes(data)
        with open(path, "rb") as f:
            whole = f.read(entry.size)
        try:
            want = ("ok", preview_archives(CID, [(aid, open_blob(aid, entry, whole), T, T + W)]))
        except ArchiveError as err:
            want = (err.code, str(err), err.archive_id)
        try:
            got = ("ok", read_window_preview(path, CID, {aid: entry}, WindowImport(T, T + W, (aid,))))
        except ArchiveError as err:
            got = (err.code, str(err), err.archive_id)
        assert got == want, name
        seen.add(want[0])
    assert seen == {"ok", "archive-incomplete", "padding-nonzero", "padding-exceeds-size", "archive-undecodable"}


def _archives():
    ms = [_message(i) for i in range(9)]
    return [("0xa", codec.encode_archive(T, T + W, [TOPIC], ms), T, T + W)]


def test_a_small_preview_stays_in_process_and_starts_no_worker():
    pool = RowPool(workers=2)                        # PREVIEW_MIN_BYTES as shipped: nine messages are below it
    try:
        assert pool.preview(CID, _archives()) == preview_archives(CID, _archives())
        assert pool._pool is None and not pool.broken
    finally:
        pool.shutdown()


def test_the_workers_are_not_forked_from_the_calling_process():
    """`forkserver`, never `fork`: the caller is a threaded engine or the Qt window, and a child forked from a
    process with threads can inherit a lock held by one of them. A worker's parent is the fork server."""
    pool = RowPool(workers=2)
    try:
        parent = pool._executor().submit(os.getppid).result(timeout=120)
        assert parent != os.getpid()
        assert pool._executor().submit(os.getpid).result(timeout=120) != os.getpid()
    finally:
        pool.shutdown()


def test_a_killed_preview_worker_never_loses_the_window_and_the_pool_stays_off():
    pool = RowPool(workers=2)
    pool.PREVIEW_MIN_BYTES = 1
    want = preview_archives(CID, _archives())
    try:
        assert pool.preview(CID, _archives()) == want and not pool.broken      # a worker up
        for proc in list(pool._pool._processes.values()):
            os.kill(proc.pid, signal.SIGKILL)
        assert pool.preview(CID, _archives()) == want                         # done here instead
        assert pool.broken is True
        assert pool.preview(CID, _archives()) == want                         # and here from now on
        assert pool.broken is True
    finally:
        pool.shutdown()
