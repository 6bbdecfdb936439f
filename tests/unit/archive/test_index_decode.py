"""decode_index reads the index as a list of map entries, sorts positions and hashes all IDs in one call (issue 14,
the 200k-entry inspect): it must give exactly what the plain reading gives (a protobuf map, one IndexEntry per
entry, IDs from encode(), sorted by offset then key) on valid, mutated and random bytes. And the inspect listing
made straight from the entries must be the listing of the rows."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from core.archive import codec
from core.archive.cli import _archive_lines, _entry_lines
from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import DecodeError
from core.archive.inspect import Inspection
from core.pb import communities_archive_pb2 as pb

TOPIC = b"\x00\xeb\x85\xa7"


def plain_decode(raw: bytes) -> dict[str, IndexEntry]:
    """The reference: the generated map type, an entry per key, sorted by (offset, key)."""
    idx = pb.WakuMessageArchiveIndex()
    try:
        idx.ParseFromString(raw)
    except Exception as e:  # noqa: BLE001 - compared with decode_index's DecodeError below
        raise DecodeError(str(e), code="index-undecodable") from None
    if raw and not idx.archives:
        raise DecodeError("no archives", code="index-undecodable")
    idx.DiscardUnknownFields()
    out = {k: IndexEntry.from_pb(idx.archives[k]) for k in idx.archives}
    return dict(sorted(out.items(), key=lambda kv: (kv[1].offset, kv[0])))


def same_decoding(raw: bytes) -> None:
    try:
        want = plain_decode(raw)
    except DecodeError as e:
        with pytest.raises(DecodeError) as got:
            codec.decode_index(raw)
        assert got.value.code == e.code == "index-undecodable"
        return
    got = codec.decode_index(raw)
    assert list(got.items()) == list(want.items())            # same entries, same (data) order
    # the ID computed while decoding is the one encode() gives (status-go's ID of the entry)
    assert [e.archive_id for e in got.values()] == ["0x" + codec._keccak256_public(e.encode()).hex()
                                                     for e in want.values()]


def entry(k: int, *, offset: int | None = None, version: int = 0, topics=(TOPIC,)) -> IndexEntry:
    return IndexEntry(1_600_000_000 + k * 3600, 1_600_003_600 + k * 3600, topics,
                      k * PIECE_LENGTH if offset is None else offset, PIECE_LENGTH, PIECE_LENGTH - 70 - k,
                      version)


def index_of(entries: list[IndexEntry], keys: list[str] | None = None) -> bytes:
    keys = keys or [e.archive_id for e in entries]
    return codec.encode_index(dict(zip(keys, entries)))


def test_valid_index_decodes_in_data_order_with_its_ids():
    es = [entry(k) for k in range(50)]
    raw = index_of(es)
    got = codec.decode_index(raw)
    assert list(got.values()) == es                     # offset order, not the key order of the file
    assert all(k == e.archive_id for k, e in got.items())
    same_decoding(raw)


def test_key_written_twice_keeps_its_last_entry_as_a_map_does():
    a, b = entry(1), entry(2)
    raw = index_of([a], ["0xk"]) + index_of([b], ["0xk"])  # concatenated messages: the key's entry comes twice
    assert codec.decode_index(raw) == {"0xk": b}
    same_decoding(raw)
    same_decoding(index_of([a, b]) + index_of([a], [b.archive_id]))


def test_archives_at_one_offset_are_ordered_by_key():
    es = [entry(k, offset=0) for k in range(6)] + [entry(9, offset=PIECE_LENGTH)]
    got = codec.decode_index(index_of(es))
    assert list(got) == sorted(k for k, e in got.items() if e.offset == 0) + [es[-1].archive_id]
    same_decoding(index_of(es))


def test_offsets_beyond_float_precision_keep_their_order():
    big = 1 << 60
    es = [entry(k, offset=big + k * PIECE_LENGTH) for k in (3, 1, 2)] + [entry(0, offset=big + 1)]
    got = codec.decode_index(index_of(es))
    assert [e.offset for e in got.values()] == sorted(e.offset for e in es)
    same_decoding(index_of(es))


def test_entries_whose_bytes_are_not_encodes_get_their_id_from_the_fields():
    """A set entry version, unknown fields, a metadata version, several or no topics: the ID is still encode()'s."""
    es = [entry(1, version=3), entry(2, topics=()), entry(3, topics=(TOPIC, b"\x01\x02\x03\x04"))]
    raw = bytearray(index_of(es))
    same_decoding(bytes(raw))
    md = pb.WakuMessageArchiveIndexMetadata(metadata=codec.metadata_pb(5, 6, [TOPIC]), offset=PIECE_LENGTH * 7)
    md.metadata.version = 2
    idx = pb.WakuMessageArchiveIndex()
    idx.archives["0xv"].CopyFrom(md)
    unknown = b"\x0a\x0c\x0a\x03\x30\x78\x75\x12\x05\xf8\x01\x01\x18\x01"   # key 0xu, value: field 31 + offset 1
    same_decoding(idx.SerializeToString() + unknown)
    assert codec.decode_index(unknown)["0xu"].offset == 1


def test_too_many_topics_is_refused_before_anything_is_built():
    e = entry(1, topics=(TOPIC,) * (codec.MAX_TOPICS + 1))
    with pytest.raises(DecodeError, match="topics, over 65536") as err:
        codec.decode_index(index_of([e], ["0xk"]))
    assert err.value.code == "index-undecodable"


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 32), st.integers(1, 40), st.integers(0, 6))
def test_mutated_indexes_decode_as_the_map_does(seed, n, mutations):
    rnd = random.Random(seed)
    es = [entry(rnd.randrange(1000), offset=rnd.choice([0, PIECE_LENGTH * rnd.randrange(50), rnd.randrange(2 ** 64)]),
                version=rnd.choice([0, 0, 0, 1])) for _ in range(n)]
    keys = [rnd.choice([e.archive_id, "0x" + "ab" * rnd.randrange(3), e.archive_id.upper()]) for e in es]
    raw = bytearray(index_of(es, keys))
    for _ in range(mutations):
        i = rnd.randrange(len(raw))
        op = rnd.randrange(3)
        if op == 0:
            raw[i] = rnd.randrange(256)
        elif op == 1:
            del raw[i]
        else:
            raw[i:i] = bytes([rnd.randrange(256)])
    same_decoding(bytes(raw))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_decode_as_the_map_does(raw):
    same_decoding(raw)


def test_entry_ids_without_the_fast_hash_are_the_same():
    encs = [entry(k).encode() for k in range(20)] + [entry(1, version=1).encode(), b"", b"\x12", b"\x12\x02\x08\x01"]
    assert codec._entry_ids(encs) == codec._entry_ids_public(encs)
    assert codec._entry_ids_public(encs)[:20] == [entry(k).archive_id for k in range(20)]
    assert codec._entry_ids_public(encs)[20:] == [None] * 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0, 1, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 1, 2 ** 64 - 1]),
                          st.text(max_size=3)), max_size=12))
def test_sorted_entries_is_offset_then_key(spec):
    entries = {f"0x{key}{i}": IndexEntry(0, 1, (), base + small, PIECE_LENGTH, 0)
               for i, (small, base, key) in enumerate(spec)}
    assert codec.sorted_entries(entries) == sorted(entries.items(), key=lambda kv: (kv[1].offset, kv[0]))


# -- the listing of an index without data, made from its entries ------------------------------------------------

def listing_both_ways(entries: dict[str, IndexEntry]) -> list[str]:
    ins = Inspection("src", "index", None, entries=dict(codec.sorted_entries(entries)))
    assert ins.bare and not ins.faulty
    fast = _entry_lines(ins.entries)
    assert ins.bare                                     # the listing built no rows
    assert fast == _archive_lines(ins.rows) and not ins.bare
    return fast


def test_listing_from_entries_is_the_listing_of_the_rows():
    lines = listing_both_ways({e.archive_id: e for e in (entry(k) for k in range(30))})
    assert len(lines) == 30 and lines[0].startswith(f"{entry(0).archive_id:68} 2020-09-13 12:26 2020-09-13 13:26")
    assert lines[0].endswith("     0    102400   102330      1       -")


def test_listing_of_hostile_entries_is_the_listing_of_the_rows():
    """Keys that are not printable or too long, timestamps no date holds, offsets past any piece count."""
    odd = {"0x\x1b[31mred": IndexEntry(-5, 2 ** 63, (), 0, 0, 7), "k" * 100: IndexEntry(0, 86_399, (), 10, 5, 0),
           "0xlate": IndexEntry(253_402_300_799, 253_402_300_800, (), 2 ** 64 - 1, 2 ** 64 - 1, 0)}
    lines = listing_both_ways(odd)
    assert any("\\x1b[31mred" in line and str(2 ** 63) in line for line in lines)
    assert listing_both_ways({"0xa": IndexEntry(0, 59, (), 0, PIECE_LENGTH * 3, 1)})[0].split()[1:3] == [
        "1970-01-01", "00:00"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-2 ** 40, 2 ** 40), st.integers(-2 ** 40, 2 ** 40),
                          st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 40)), max_size=8))
def test_any_listing_from_entries_is_the_listing_of_the_rows(spec):
    listing_both_ways({f"0x{i}": IndexEntry(s, e, (), o, z, z // 2) for i, (s, e, o, z) in enumerate(spec)})


def test_padding_rule_of_the_fast_check_is_padded_sizes():
    """check_entries' one-expression test of a healthy entry solves padded_size for piece-multiple sizes: every
    size/padding pair around the boundaries gets a padding-formula warning exactly when padded_size disagrees."""
    from core.archive.index_check import check_entries
    pl = PIECE_LENGTH
    for size in (pl, 2 * pl, 3 * pl, 7 * pl):
        pads = {p for b in range(0, size + 1, pl) for p in (b - 2, b - 1, b, b + 1, b + 2) if 0 <= p <= size}
        for pad in sorted(pads | {size // 2, size // 3}):
            e = IndexEntry(0, 1, (), 0, size, pad)
            codes = [f.code for f in check_entries({e.archive_id: e}, size)]
            assert ("padding-formula" in codes) == (codec.padded_size(size - pad) != (size, pad)), (size, pad)
            assert codes in ([], ["padding-formula"]), (size, pad, codes)


def test_an_entry_whose_value_has_the_wrong_wire_type_is_dropped_as_the_map_drops_it():
    """Found by the mutated-index test (seed 451173): the first entry's value field (2) arrives as a varint. The
    map reading drops that entry; a list-of-entries reading would keep it with an empty value."""
    raw = bytes.fromhex(
        "0a6d0a42305838444543413638364536374446374442314233454135453433453737323838323431364442423546324331464631"
        "364631324136433362413335443841443846351227121210a090dbfb0518b0acdbfb05220400eb85a718c4bea5b4cde8a7bdc801"
        "2080a006289b060a6c0a423058463243333145333739463438424333313239323946373245423932384133353532313336384134"
        "453942443337304135434139413332313635413239454235451226121210d0f1aafc0518e08dabfc05220400eb85a71882d5f9f0"
        "e0bacae51d2080a006288d9906")
    same_decoding(raw)
    assert list(codec.decode_index(raw)) == ["0XF2C31E379F48BC312929F72EB928A35521368A4E9BD370A5CA9A32165A29EB5E"]
