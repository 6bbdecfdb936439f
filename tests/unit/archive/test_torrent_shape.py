"""A .torrent's shape is checked before fastbencode builds it: at most 100 levels deep (libtorrent's own limit) and
100,000 values. fastbencode took ~5 CPU-s and ~1 GB for 16 MiB of nested lists, which a person opening a file in
the Inspector (or `archivist inspect`) would have paid."""
from __future__ import annotations

import fastbencode
import pytest
from hypothesis import given, settings, strategies as st

from core.archive.errors import InvalidTorrent
from core.archive.torrent import MAX_BENCODE_DEPTH, MAX_BENCODE_VALUES, check_bencode_shape, parse_metainfo


def nested(levels: int) -> bytes:
    return b"l" * levels + b"e" * levels


def test_depth_limit():
    check_bencode_shape(nested(MAX_BENCODE_DEPTH))
    with pytest.raises(InvalidTorrent) as e:
        check_bencode_shape(nested(MAX_BENCODE_DEPTH + 1))
    assert (e.value.code, str(e.value)) == ("torrent-undecodable", "torrent is nested deeper than 100 levels")


@pytest.mark.parametrize("item", [b"i7e", b"0:", b"3:abc", b"le", b"de"])
def test_value_limit(item):
    # the outer list is one value: MAX - 1 items fit, one more does not
    check_bencode_shape(b"l" + item * (MAX_BENCODE_VALUES - 1) + b"e")
    with pytest.raises(InvalidTorrent, match=r"^torrent holds more than 100000 values$"):
        check_bencode_shape(b"l" + item * MAX_BENCODE_VALUES + b"e")


def test_a_hostile_torrent_is_refused_before_it_is_decoded():
    levels = 8_000_000                      # 16 MiB, the largest file parse_metainfo reads
    with pytest.raises(InvalidTorrent) as e:
        parse_metainfo(b"d4:infol" + nested(levels) + b"ee")
    assert e.value.code == "torrent-undecodable" and "deeper than 100" in str(e.value)


def test_string_lengths_are_skipped_not_walked():
    """A string's bytes are not tokens: a 1 MB string of "l" is one value at depth 1."""
    check_bencode_shape(b"l" + b"1000000:" + b"l" * 1_000_000 + b"e")


values = st.recursive(st.integers(-10 ** 20, 10 ** 20) | st.binary(max_size=20),
                      lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(st.binary(max_size=8), inner, max_size=5), max_leaves=40)


@settings(max_examples=200, deadline=None)
@given(values)
def test_every_small_value_passes_and_still_decodes(v):
    raw = fastbencode.bencode(v)
    check_bencode_shape(raw)
    assert fastbencode.bdecode(raw) == v


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_pass_or_are_refused_with_invalid_torrent(raw):
    try:
        check_bencode_shape(raw)
    except InvalidTorrent as e:
        assert e.code == "torrent-undecodable"
