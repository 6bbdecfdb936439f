"""`archivist inspect` and `verify` of a large index (issue 14: 200k entries in under 3 s), whole process, each
beside a reference measured in the same run: a Python process that reads the same index file and parses it with
protobuf (upb), the least that any Python reader of the index must do.

Default: 20k entries. ARCHIVIST_SLOW=1 (`make bench`): 200k (ARCHIVIST_BENCH_INDEX_ENTRIES overrides)."""
import os
import subprocess
import sys
import time

from core.archive import codec
from core.archive.constants import PIECE_LENGTH
from tests.bench.table import record

N = int(os.environ.get("ARCHIVIST_BENCH_INDEX_ENTRIES", 200_000 if os.environ.get("ARCHIVIST_SLOW") == "1"
                       else 20_000))
REFERENCE = ("import sys; from core.pb import communities_archive_pb2 as pb; "
             "i = pb.WakuMessageArchiveIndex(); i.ParseFromString(open(sys.argv[1], 'rb').read()); "
             "print(len(i.archives))")


def _index(n: int) -> bytes:
    """n consecutive weekly archives, one piece each, packed as `build` writes them."""
    entries = {}
    for k in range(n):
        e = codec.IndexEntry(1_600_000_000 + k * 604_800, 1_600_000_000 + (k + 1) * 604_800, (b"\x00\xeb\x85\xa7",),
                             k * PIECE_LENGTH, PIECE_LENGTH, PIECE_LENGTH - 72)
        entries[e.archive_id] = e
    return codec.encode_index(entries)


def _run(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600)
    return time.perf_counter() - t0, p


def test_inspect_and_verify_a_large_index(tmp_path):
    index = tmp_path / "index"
    index.write_bytes(_index(N))
    t_ref, ref = _run("-c", REFERENCE, str(index))
    assert ref.returncode == 0 and ref.stdout.strip() == str(N), ref.stderr
    t_verify, v = _run("-m", "core.cli", "verify", str(index))
    t_inspect, i = _run("-m", "core.cli", "inspect", str(index))
    print(f"\nINDEX {N} entries, {index.stat().st_size / 1e6:.1f} MB, whole process (goal at 200k: < 3 s each)")
    print(f"  reference (read + protobuf parse): {t_ref:6.2f} s")
    print(f"  archivist verify                 : {t_verify:6.2f} s  {t_verify / t_ref:5.2f}x")
    print(f"  archivist inspect                : {t_inspect:6.2f} s  {t_inspect / t_ref:5.2f}x")
    goal = "< 3 s at 200k" if N >= 200_000 else ""
    record("index", f"verify of a {N:,}-entry index, whole process", t_verify, "s", "read + protobuf parse", t_ref,
           goal)
    record("index", f"inspect of a {N:,}-entry index, whole process", t_inspect, "s", "read + protobuf parse", t_ref,
           goal)
    assert v.returncode == 0, v.stdout + v.stderr           # only the index: warnings (no data), no fault
    assert f"OK: {N} archives" in v.stdout
    assert i.returncode == 0 and f"{N} archives in" in i.stdout, i.stderr
    assert len(i.stdout.splitlines()) >= N + 2
