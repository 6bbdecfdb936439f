"""The stage folder without a JVM: what the driver stages and what an executor makes of it (core/pipeline/stage.py,
source.StageArchivesReader) against the reference encoder over the SQLite store; modes, removal, the one line of an
executor that cannot see the stage."""
from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from core.archive import codec
from core.archive.partition import chunk_messages, partitions
from core.pipeline.source import STAGE_UNSEEN, STORE_UNSEEN, StageArchivesReader, WindowPartition, stage_window_file, \
    store_archive_rows
from core.pipeline.stage import Stage, StageUnseen, stage_windows, unseen_message
from core.pipeline.session import JobFailed
from core.storage import waku_messages
from tests.integration.pipeline.helpers import OTHER_TOPIC, T0, TOPICS, WEEK, msg, write_store

CAP = 3000


def _store(tmp_path: Path) -> Path:
    ms = [msg(T0 + i * 3000, bytes([i % 251]) * (100 + 37 * i)) for i in range(60)]      # ~2 weeks, many chunks
    ms += [msg(T0 + 5, b"same-ts-%d" % i, tag=bytes([i])) for i in range(5)]           # equal timestamps
    ms += [msg(T0 + 10, b"x" * (CAP + 1)), msg(T0 + 11, b"y" * (CAP - 65))]            # over the cap / at it
    ms += [msg(T0 + 20, b"foreign", topic=OTHER_TOPIC), msg(T0 + 30, b"chan1", topic=TOPICS[1])]
    ms += [msg(T0 + 3 * WEEK + 7, b"after an empty week")]
    return write_store(tmp_path / "store.sqlite", ms)


def _read(reader, windows) -> list[tuple]:
    rows = []
    for n, (lo, hi) in enumerate(windows):
        for b in reader.read(WindowPartition(n, lo, hi)):
            rows.extend(zip(*b.to_pydict().values()))
    return rows


def test_staged_windows_encode_to_the_reference_bytes(tmp_path):
    db = _store(tmp_path)
    windows = partitions(T0, T0 + 4 * WEEK)
    con = waku_messages.connect(db, create=False)
    try:
        ref = [codec.encode_archive(lo, hi, TOPICS, chunk) for lo, hi in windows
               for chunk in chunk_messages(waku_messages.query_messages(con, TOPICS, lo, hi), CAP)]
        with Stage(tmp_path / "stage", "app-test") as stage:
            rows = stage_windows(con, TOPICS, windows, CAP, stage)
            assert rows == 60 + 5 + 1 + 1 + 1   # the foreign topic and the message over the cap are not staged
            # 0700 folders, 0600 files, one file per window (the empty third week too)
            for d in (stage.path, stage.inp, stage.out, *stage.inp.iterdir()):
                assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
            files = sorted(stage.inp.glob("window=*/part.parquet"))
            assert [f.parent.name for f in files] == [f"window={n}" for n in range(len(windows))]
            assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
            opts = {"stage": str(stage.path), "topics": ",".join("0x" + t.hex() for t in TOPICS),
                    "windows": "[]", "cap": str(CAP)}
            got = _read(StageArchivesReader(opts), windows)
            assert all(r[6] is None for r in got), [r[6] for r in got if r[6]]
            assert len(got) == len(ref) > 5
            assert [Path(r[7]).read_bytes() for r in got] == ref
            assert all(Path(r[7]).parent == stage.out for r in got)
            assert all(stat.S_IMODE(os.stat(r[7]).st_mode) == 0o600 for r in got)
            # the same rows as the fused plan reading SQLite directly
            spool = tmp_path / "spool"
            spool.mkdir()
            fused = list(store_archive_rows(str(db), TOPICS, [(n, *w) for n, w in enumerate(windows)], CAP,
                                            spool_dir=str(spool)))
            assert [Path(r[7]).read_bytes() for r in fused] == ref
            assert [r[:5] for r in fused] == [r[:5] for r in got]
        assert not stage.path.exists() and (tmp_path / "stage").is_dir()
    finally:
        con.close()


def test_an_executor_that_cannot_see_the_stage_answers_with_its_host(tmp_path):
    missing = tmp_path / "not-mounted" / "app-1-abcd"
    opts = {"stage": str(missing), "topics": "0x" + TOPICS[0].hex(), "windows": "[]", "cap": str(CAP)}
    rows = _read(StageArchivesReader(opts), [(T0, T0 + WEEK)])
    assert len(rows) == 1 and rows[0][7] is None
    assert rows[0][6] == f"{STAGE_UNSEEN}\t{socket.gethostname()}\t{missing}"
    line = unseen_message(rows[0][6])
    assert line == (f"the Spark executor on host {socket.gethostname()} cannot see the stage folder {missing}: "
                    "--stage-dir must be a folder shared at the same path on every worker (and the driver); "
                    "nothing was written")
    assert "\n" not in line and unseen_message("ValueError: boom") is None
    # Without a stage, an executor that cannot open the store says so the same way (fused plan).
    store = tmp_path / "elsewhere" / "store.sqlite"
    rows = list(store_archive_rows(str(store), TOPICS[:1], [(0, T0, T0 + WEEK)], CAP))
    assert [r[6] for r in rows] == [f"{STORE_UNSEEN}\t{socket.gethostname()}\t{store}"]
    assert unseen_message(rows[0][6]) == (
        f"the Spark executor on host {socket.gethostname()} cannot open the message store {store}: give "
        "--stage-dir (a folder shared by this machine and every worker), or put the store at the same path on "
        "every worker; nothing was written")
    assert issubclass(StageUnseen, JobFailed)   # the CLI's exit 1, one line


def test_the_stage_folder_goes_whatever_the_end(tmp_path):
    with pytest.raises(RuntimeError):
        with Stage(tmp_path / "s", "app-x") as stage:
            Path(stage_window_file(str(stage.path), 0)).parent.mkdir()
            (stage.out / "000000-000000.archive").write_bytes(b"x")
            raise RuntimeError("cancelled")
    assert list((tmp_path / "s").iterdir()) == []
    # a stage root that cannot be made is one ArchiveError naming it; nothing is left
    (tmp_path / "file").write_bytes(b"")
    from core.archive.errors import ArchiveError
    with pytest.raises(ArchiveError, match="stage folder"):
        Stage(tmp_path / "file" / "s", "app-y").create()
    # two jobs of one application get two folders
    a, b = Stage(tmp_path / "s", "app-z"), Stage(tmp_path / "s", "app-z")
    assert a.path != b.path and a.path.name.startswith("app-z-")


def test_hydrate_reads_the_staged_archives_as_it_reads_data(tmp_path):
    from core.archive.build import build_archives
    from core.archive.constants import DATA_FILE, INDEX_FILE
    from core.pipeline.hydrate import decode_entries
    from core.pipeline.stage import stage_archives
    from core.status.unwrap import no_unwrap
    from tests.integration.pipeline.helpers import COMMUNITY
    db = _store(tmp_path)
    res = build_archives(db, COMMUNITY, TOPICS, tmp_path / "d", tmp_path / "t", end=T0 + 4 * WEEK)
    folder = tmp_path / "d" / COMMUNITY
    index = codec.decode_index((folder / INDEX_FILE).read_bytes())
    entries = [(a, e.offset, e.size, e.padding, e.start, e.end) for a, e in index.items()]
    assert len(entries) == len(res.new_archive_ids) >= 2
    data = str(folder / DATA_FILE)
    direct = list(decode_entries(entries, data, COMMUNITY, no_unwrap))
    assert all(err is None for _, err, _ in direct) and sum(len(r) for _, _, r in direct) == res.messages
    with Stage(tmp_path / "stage", "app-h") as stage:
        stage_archives(data, [(a, off, size) for a, off, size, *_ in entries], stage)
        blob = (folder / DATA_FILE).read_bytes()
        for a, off, size, *_ in entries:   # each archive's bytes, 0600, nothing else
            assert (stage.inp / a).read_bytes() == blob[off:off + size]
            assert stat.S_IMODE((stage.inp / a).stat().st_mode) == 0o600
        assert sorted(p.name for p in stage.inp.iterdir()) == sorted(a for a, *_ in entries)
        # the executor reads only the stage: the same rows, with `data` gone
        (folder / DATA_FILE).rename(tmp_path / "moved")
        assert list(decode_entries(entries, data, COMMUNITY, no_unwrap, stage=str(stage.path))) == direct
        # without the stage, `data` missing on this machine: every entry gets the one error
        host = socket.gethostname()
        assert list(decode_entries(entries, data, COMMUNITY, no_unwrap)) == [
            (a, f"data-unseen\t{host}\t{data}", None) for a, *_ in entries]
        assert unseen_message(f"data-unseen\t{host}\t{data}", "nothing was imported") == (
            f"the Spark executor on host {host} cannot open the downloaded archives {data}: give --stage-dir (a "
            "folder shared by this machine and every worker), or put the folder at the same path on every "
            "worker; nothing was imported")
    # a stage this executor cannot see
    assert list(decode_entries(entries, data, COMMUNITY, no_unwrap, stage=str(stage.path))) == [
        (a, f"{STAGE_UNSEEN}\t{socket.gethostname()}\t{stage.path}", None) for a, *_ in entries]


def test_unusual_rows_stage_and_encode_to_the_reference_bytes(tmp_path):
    """Rows the bulk reading takes as they are (sigs of several widths, padding, third-party IDs, same-second
    ties) and rows it reads again as messages (a hash of another width in the batch): the staged windows encode
    to the bytes of the row-by-row reference (codec.encode_archive of chunk_messages)."""
    from core.archive.codec import ArchiveMessage
    ms = [ArchiveMessage(b"\x04" * (65 if i % 3 else 64), T0 + i // 2, TOPICS[i % 2], bytes([i]) * (50 + i),
                         b"\x00" * (i % 4), bytes([i, 7]) * 16, "tp-é%d" % i if i % 5 == 0 else "")
          for i in range(40)]
    ms.append(ArchiveMessage(SIG_65, T0 + WEEK + 9, TOPICS[0], b"short hash", b"", b"\x09" * 20, ""))
    ms += [msg(T0 + WEEK + 9 + i, b"after %d" % i) for i in range(6)]
    db = write_store(tmp_path / "store.sqlite", ms)
    windows = partitions(T0, T0 + 3 * WEEK)
    con = waku_messages.connect(db, create=False)
    try:
        ref = [codec.encode_archive(lo, hi, TOPICS, chunk) for lo, hi in windows
               for chunk in chunk_messages(waku_messages.query_messages(con, TOPICS, lo, hi), 600)]
        with Stage(tmp_path / "stage", "app-odd") as stage:
            assert stage_windows(con, TOPICS, windows, 600, stage) == len(ms)
            opts = {"stage": str(stage.path), "topics": ",".join("0x" + t.hex() for t in TOPICS),
                    "windows": "[]", "cap": "600"}
            got = _read(StageArchivesReader(opts), windows)
            assert all(r[6] is None for r in got), [r[6] for r in got if r[6]]
            assert [Path(r[7]).read_bytes() for r in got] == ref and len(ref) > 3
    finally:
        con.close()


SIG_65 = b"\x04" + b"\x22" * 64
