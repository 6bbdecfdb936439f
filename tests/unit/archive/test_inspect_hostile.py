"""Hostile files given to `archivist inspect` / `verify` (each run a process of its own: `core.cli.main` forked from
the tests' fork server, tests/support/forked.py, instead of a new interpreter each time): a clear message
and exit 1 or 2, never a traceback, a MemoryError or a hang (each run is bounded by a timeout, then killed)."""
import functools
import json
import random
from pathlib import Path

import pytest

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from tests.support import forked

pytestmark = pytest.mark.usefixtures("fork_server")   # stopped after this file: no process left

TOPIC = bytes.fromhex("00eb85a7")
CID = "0x02" + "ab" * 32
TIMEOUT = 60          # a hang, not a speed limit: each of these finishes in about a second


def run(*args):
    p = forked.run_cli(list(args), timeout=TIMEOUT)
    for bad in ("Traceback", "MemoryError", "RecursionError"):
        assert bad not in p.stderr and bad not in p.stdout, (args, p.stderr[-2000:])
    return p


@functools.lru_cache(maxsize=1)
def real_archive() -> bytes:
    msgs = [ArchiveMessage(b"\x04" * 65, 1_600_000_100 + i, TOPIC, bytes(300), b"", i.to_bytes(32, "big"))
            for i in range(200)]
    return codec.encode_archive(1_600_000_000, 1_600_604_800, [TOPIC], msgs)


def folder_with(tmp: Path, entries, data: bytes | None = None, *, keyed: bool = True) -> Path:
    """A folder whose `data` holds one real archive (unless `data` is given) and whose index is `entries`
    (keyed by their IDs, or a {key: entry} mapping as given)."""
    f = tmp / CID
    f.mkdir()
    if data is None:
        raw = real_archive()
        data = raw + bytes(codec.padded_size(len(raw))[1])
    (f / "data").write_bytes(data)
    es = {e.archive_id: e for e in entries} if keyed else entries
    (f / "index").write_bytes(codec.encode_index(es))
    return f


def entry(offset=0, size=102400, padding=None, start=1_600_000_000, end=1_600_604_800):
    raw = len(real_archive())
    return IndexEntry(start, end, (TOPIC,), offset, size, size - raw if padding is None else padding)


def case_offset_2_63(tmp):
    return folder_with(tmp, [entry(), entry(offset=1 << 63, start=1_600_604_800, end=1_601_209_600)])


def case_size_2_64(tmp):
    return folder_with(tmp, [entry(size=(1 << 64) - 1, padding=0)])


def case_size_1tb(tmp):
    return folder_with(tmp, [entry(size=1 << 40)])


def case_padding_over_size(tmp):
    return folder_with(tmp, [entry(padding=10**12)])


def case_overlap(tmp):      # 3000 archives over the same bytes: each would be read and decoded again
    return folder_with(tmp, [entry(end=1_600_604_800 + k) for k in range(3000)])


def case_timestamps_2_64(tmp):
    return folder_with(tmp, [entry(start=(1 << 64) - 2, end=(1 << 64) - 1)])


def case_non_hex_keys(tmp):
    e = entry()
    return folder_with(tmp, {"zz": e, "\x1b[31mred\x1b[0m": entry(end=1_600_604_801), "": entry(end=2_000_000_000),
                             "k" * 10_000: entry(end=1_700_000_000)}, keyed=False)


def case_truncated_varint(tmp):
    f = folder_with(tmp, [entry()])
    (f / "index").write_bytes((f / "index").read_bytes()[:-1] + b"\x80\x80\x80")
    return f


def case_random_index(tmp):
    f = folder_with(tmp, [entry()])
    (f / "index").write_bytes(random.Random(7).randbytes(5000))
    return f


def case_random_data(tmp):
    return folder_with(tmp, [entry()], data=random.Random(8).randbytes(102400))


def case_message_bomb(tmp):  # 1.5M empty messages in 3 MB: decoding them all would take GBs
    raw = codec.encode_archive(1_600_000_000, 1_600_604_800, [TOPIC], []) + b"\x1a\x00" * 1_500_000
    size, pad = codec.padded_size(len(raw))
    return folder_with(tmp, [IndexEntry(1_600_000_000, 1_600_604_800, (TOPIC,), 0, size, pad)], raw + bytes(pad))


def case_field_bomb(tmp):  # tiny fields that are not messages, each with a 0x1a byte: walked whole, 3M took ~5 s
    raw = codec.encode_archive(1_600_000_000, 1_600_604_800, [TOPIC], []) + b"\x08\x1a" * 1_100_000
    size, pad = codec.padded_size(len(raw))
    return folder_with(tmp, [IndexEntry(1_600_000_000, 1_600_604_800, (TOPIC,), 0, size, pad)], raw + bytes(pad))


def case_index_bomb(tmp):  # 300k empty index entries in 600 kB: protobuf would build every one
    f = folder_with(tmp, [entry()])
    (f / "index").write_bytes(b"\x0a\x00" * 300_000)
    return f


def case_missing_data(tmp):
    f = folder_with(tmp, [entry()])
    (f / "data").unlink()
    return f


def case_random_torrent(tmp):
    p = tmp / f"{CID}.torrent"
    p.write_bytes(b"d4:infod" + random.Random(9).randbytes(3000))
    return p


def case_random_file(tmp):
    p = tmp / "blob.bin"
    p.write_bytes(random.Random(10).randbytes(3000))
    return p


# each hostile input, and the fault `verify` must name (None: several are possible)
CASES = [(case_offset_2_63, "index-past-data"), (case_size_2_64, "size-not-piece-multiple"),
         (case_size_1tb, "index-past-data"), (case_padding_over_size, "padding-exceeds-size"),
         (case_overlap, "offset-overlap"), (case_non_hex_keys, "key-mismatch"),
         (case_truncated_varint, "index-undecodable"), (case_random_index, "index-undecodable"),
         (case_random_data, "archive-undecodable"), (case_message_bomb, "archive-too-many-messages"),
         (case_field_bomb, "archive-undecodable"), (case_index_bomb, "index-too-big"),
         (case_missing_data, "data-missing"), (case_random_torrent, None), (case_random_file, "index-undecodable")]


@pytest.mark.parametrize("make,code", CASES, ids=[c.__name__[5:] for c, _ in CASES])
def test_hostile_input_gives_a_clear_message(tmp_path, make, code):
    path = make(tmp_path)
    i = [c for c, _ in CASES].index(make)
    listing = ["--messages", "--json"] if i % 2 else ["--messages"]   # both output paths, over all cases
    for args in (["inspect", path, *listing], ["verify", path]):
        p = run(*args)
        assert p.returncode in (1, 2), (args, p.returncode, p.stdout[-1000:], p.stderr[-1000:])
        said = p.stderr if p.returncode == 2 else p.stdout + p.stderr
        assert said.strip(), args
        if p.returncode == 2:
            assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        if "--json" in args and p.returncode == 1 and p.stdout:
            json.loads(p.stdout)
    if code:   # not only no crash: the reason is the right one
        assert p.returncode == 1 and f"ERROR {code}" in p.stdout, p.stdout[-1500:]


def test_inspect_marks_unreadable_archives_and_still_lists_the_rest(tmp_path):
    f = case_overlap(tmp_path)
    out = json.loads(run("inspect", f, "--json").stdout)
    rows = out["archives"]
    assert len(rows) == 3000
    assert sum(r["messages"] == 200 for r in rows) == 1                 # the one archive actually there
    assert sum((r["error"] or "").startswith("offset-overlap") for r in rows) == 2999
    assert {x["code"] for x in out["findings"]} >= {"offset-overlap"}


def test_oversized_index_is_refused_before_reading(tmp_path):
    f = tmp_path / CID
    f.mkdir()
    with open(f / "index", "wb") as fh:     # sparse: 65 MiB claimed, nothing allocated
        fh.truncate(65 * 1024 * 1024)
    (f / "data").write_bytes(b"")
    for cmd in ("inspect", "verify"):
        p = run(cmd, f)
        assert p.returncode == 1 and "index-too-big" in p.stdout + p.stderr, p


def test_absurd_timestamps_are_shown_as_numbers(tmp_path):
    """A window no date can hold (2^64-2 .. 2^64-1) is listed as numbers; verify names the mismatch."""
    f = case_timestamps_2_64(tmp_path)
    p = run("inspect", f)
    assert p.returncode == 0 and str((1 << 64) - 2) in p.stdout
    p = run("verify", f)
    assert p.returncode == 1 and "ERROR metadata-mismatch" in p.stdout


@pytest.mark.parametrize("make,code", CASES, ids=[c.__name__[5:] for c, _ in CASES])
def test_the_gui_inspector_reports_instead_of_raising(tmp_path, make, code):
    """gui/inspection goes through the same core functions: every hostile input opens as a report or an error
    string, and decoding a listed archive raises ArchiveError (shown in the view), nothing else."""
    from core.archive.errors import ArchiveError
    from gui.inspection import message_counts, open_source
    path = make(tmp_path)
    res = open_source(str(path))
    assert res.error or (res.report is not None and not res.report.ok), (res.error, res.report)
    if code and res.report is not None:
        assert code in {f.code for f in res.report.findings}
    for row in res.rows[:20]:
        try:
            res.messages(row.archive_id)
        except ArchiveError:
            pass
    if res.folder is not None and (res.folder / "data").exists() and (res.folder / "index").exists():
        try:
            message_counts(res.folder)
        except ArchiveError:
            pass
