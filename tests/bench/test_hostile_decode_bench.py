"""How long an archive decode takes to refuse a hostile archive (core.archive.codec.parse_archive_pb, which `inspect`,
`verify`, the GUI inspector and every import go through), beside the protobuf library parsing the same bytes into
an empty message in the same run (C, nothing materialised: the floor of any look at those bytes).

- message bomb: a real header, then 1.5M empty messages (3 MB): refused as archive-too-many-messages once the
  count passes 1M;
- index bomb: empty index entries (`0a 00`), as many as 4 MiB holds (64 MiB with ARCHIVIST_SLOW=1; a torrent's
  index file may be 64 MiB): refused as index-too-big after MAX_INDEX_ENTRIES (262,144), before protobuf builds them.
  Before, protobuf built every one: 16 MiB took 25.7 CPU-s and 1.5 GB (peak RSS), to end as an index of 1 entry;
- field bomb: a real header, then tiny fields that are not messages, each holding a 0x1a byte (the cheap bound on
  messages), up to the largest archive `data` may hold (64 MiB; 4 MiB in the quick run): refused as
  archive-undecodable once there are more top-level fields than any archive has. Before that bound the walk went
  through all of them in Python: 3M fields (6 MB) took ~5 CPU-s, 64 MiB ~43 CPU-s, on every decode;
- topic bomb: one metadata of empty topics (`22 00`), as many as the field bomb's size holds: refused as
  archive-undecodable after MAX_TOPICS (65,536), counted in the metadata's own bytes. Before, protobuf built every
  one (64 MiB: ~1 CPU-s and 1.2 GB peak RSS) and the count was checked after.

CPU seconds of this process, one round in the quick run (`make test`'s check that it runs); ARCHIVIST_SLOW=1: the
best of 3, and the 64 MiB field bomb."""
from __future__ import annotations

import os
import time

import pytest
from google.protobuf import empty_pb2

from core.archive import codec
from core.archive.errors import DecodeError
from core.archive.index_check import MAX_ARCHIVE_BYTES
from core.varint import write_varint
from tests.bench.table import record

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
TOPIC = b"\x00\xeb\x85\xa7"
HEAD = codec.encode_archive(1_600_000_000, 1_600_604_800, [TOPIC], [])
FIELD_BOMB_BYTES = MAX_ARCHIVE_BYTES if SLOW else 4 * 1024 * 1024
ROUNDS = 3 if SLOW else 1


def best_cpu(fn, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


@pytest.mark.parametrize("name,raw,code", [
    ("message bomb, 1.5M empty messages", HEAD + b"\x1a\x00" * 1_500_000, "archive-too-many-messages"),
    (f"index bomb, {FIELD_BOMB_BYTES >> 20} MiB of empty entries", b"\x0a\x00" * (FIELD_BOMB_BYTES // 2),
     "index-too-big"),
    (f"field bomb, {FIELD_BOMB_BYTES >> 20} MiB of 2-byte fields", HEAD + b"\x08\x1a" * (FIELD_BOMB_BYTES // 2),
     "archive-undecodable"),
    (f"topic bomb, {FIELD_BOMB_BYTES >> 20} MiB of empty topics",
     b"\x12" + write_varint(FIELD_BOMB_BYTES) + b"\x22\x00" * (FIELD_BOMB_BYTES // 2), "archive-undecodable"),
], ids=["message-bomb", "index-bomb", "field-bomb", "topic-bomb"])
def test_hostile_archive_is_refused_quickly(name, raw, code):
    decode = codec.decode_index if code == "index-too-big" else codec.parse_archive_pb

    def refuse():
        with pytest.raises(DecodeError) as e:
            decode(raw)
        assert e.value.code == code

    def floor():
        empty_pb2.Empty().ParseFromString(raw)
    ours, ref = best_cpu(refuse), best_cpu(floor)
    print(f"\nHOSTILE DECODE {name} ({len(raw) / 1e6:.1f} MB): refused in {ours:.3f} CPU-s; protobuf parsing the same "
          f"bytes into an empty message {ref:.3f} CPU-s ({ours / ref:.1f}x)")
    record("inspect", f"refuse a {name}", ours, "s", "protobuf parse of the same bytes", ref, "bounded by 1M fields")
