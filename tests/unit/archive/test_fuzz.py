"""Arbitrary bytes into the decoders and the verifier: a clear error, never a crash or a hang."""
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from core.archive import codec
from core.archive.errors import ArchiveError
from core.archive.torrent import parse_metainfo
from core.archive.verify import Report, verify_folder, verify_index_bytes

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=4096))
def test_index_decoder(raw):
    try:
        entries = codec.decode_index(raw)
    except ArchiveError as e:
        assert e.code == "index-undecodable" and str(e)
    else:
        assert isinstance(entries, dict)


@FUZZ
@given(st.binary(max_size=4096))
def test_archive_decoder(raw):
    try:
        arch = codec.decode_archive(raw)
    except ArchiveError as e:
        assert e.code == "archive-undecodable" and str(e)
    else:
        assert arch.start >= 0


def _valid_index() -> bytes:
    e = codec.IndexEntry(10, 20, (b"abcd",), 0, 102400, 102000)
    return codec.encode_index({e.archive_id: e})


@FUZZ
@given(st.binary(max_size=2048), st.integers(0, 300), st.binary(max_size=8))
def test_verifier_on_mutated_index(junk, pos, patch):
    raw = bytearray(_valid_index() + junk)
    raw[pos:pos + len(patch)] = patch
    rep = Report("fuzz")
    verify_index_bytes(bytes(raw), rep, data_len=102400)
    assert all(f.code and f.message for f in rep.findings)


@FUZZ
@given(st.binary(max_size=3000), st.binary(max_size=300_000))
def test_verifier_on_random_folder(index, data):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "index").write_bytes(index)
        (Path(d) / "data").write_bytes(data)
        rep = verify_folder(d)
        assert rep.ok or rep.findings


@FUZZ
@given(st.binary(max_size=4096))
def test_torrent_parser(raw):
    try:
        parse_metainfo(raw)
    except ArchiveError as e:
        assert e.code.startswith("torrent-")


@FUZZ
@given(st.recursive(st.integers() | st.binary(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.binary(max_size=12), c, max_size=5),
                    max_leaves=20))
def test_torrent_parser_structured(value):
    import fastbencode
    try:
        parse_metainfo(fastbencode.bencode({b"info": value}))
    except ArchiveError as e:
        assert e.code.startswith("torrent-")
