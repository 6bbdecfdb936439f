import pytest

from core.archive.codec import keccak256
from core.codex import index as cindex
from core.codex.cid import tree_cid
from core.codex.manifest import (LAYOUT_2025, LAYOUT_2026, ManifestError, decode_manifest,
                                 manifest_for, manifest_from_json)

T = (b"\x00\xeb\x85\xa7",)


@pytest.mark.parametrize("layout", [LAYOUT_2025, LAYOUT_2026])
@pytest.mark.parametrize("meta", [(None, None), ("hello.txt", "text/plain"), ("a.bin", None), (None, "image/png")])
def test_manifest_round_trip_both_layouts(layout, meta):
    m = manifest_for(b"Hello World!" * 9000, *meta)
    assert decode_manifest(m.encode(layout), layout) == (m, layout)
    back, got = decode_manifest(m.encode(layout))
    if all(meta) or not any(meta) or (meta[0] and layout == LAYOUT_2026):
        assert back == m        # layout detected (or irrelevant)
    if all(meta):
        assert got == layout
    # a lone field 8 is ambiguous (2025 filename or 2026 mimetype): detection picks 2025
    if (meta == ("a.bin", None) and layout == LAYOUT_2025) or (meta == (None, "image/png") and layout == LAYOUT_2026):
        assert got == LAYOUT_2025


def test_manifest_decode_errors_have_reasons():
    with pytest.raises(ManifestError, match="header"):
        decode_manifest(b"")
    good = manifest_for(b"x").encode()
    with pytest.raises(ManifestError):
        decode_manifest(good[:-3])


def test_manifest_json_shape():
    m = manifest_for(b"abc", "x.txt", "text/plain")
    assert manifest_from_json({"cid": "z", "manifest": m.to_json()}) == m
    assert m.to_json()["treeCid"] == str(tree_cid(b"abc")) and m.to_json()["datasetSize"] == 3


def entry(lo=100, hi=200, data=b"a"):
    return cindex.CodexIndexEntry(lo, hi, T, str(manifest_for(data).cid()))


def test_index_round_trip_sorted_and_deterministic():
    es = [entry(100, 200, b"a"), entry(200, 300, b"b"), entry(300, 400, b"c")]
    raw = cindex.encode_index(es)
    assert raw == cindex.encode_index(list(reversed(es)))
    back = cindex.decode_index(raw)
    assert set(back) == {e.archive_id for e in es} and cindex.check_index(back) == []
    assert all(back[e.archive_id] == e for e in es)


def test_archive_id_is_keccak_of_encoded_entry_field_numbers():
    e = entry()
    enc = e.encode()
    assert e.archive_id == "0x" + keccak256(enc).hex()
    # metadata is field 2 (0x12), cid is field 3 (0x1a) -> string
    assert enc[0] == 0x12 and b"\x1a\x34" + e.cid.encode() in enc


def test_check_index_finds_every_problem():
    good = entry()
    bad_key = {"0x" + "00" * 32: good}
    inverted = cindex.CodexIndexEntry(5, 5, T, good.cid)
    bad_cid = cindex.CodexIndexEntry(1, 2, T, "Qmnotacid")
    dup = cindex.CodexIndexEntry(7, 9, T, good.cid)
    codes = {p.code for p in cindex.check_index({**bad_key, inverted.archive_id: inverted,
                                                 bad_cid.archive_id: bad_cid, dup.archive_id: dup})}
    assert codes == {"key-mismatch", "window-inverted", "bad-cid", "duplicate-cid"}


def test_latest_and_range_use_the_torrent_rule():
    from core.torrent.selection import Selection
    es = {e.archive_id: e for e in [entry(0, 10, b"a"), entry(10, 20, b"b"), entry(20, 30, b"c"),
                                    entry(20, 30, b"d")]}
    assert {es[a].cid for a in Selection("latest").choose(es)} == {entry(data=b"c").cid, entry(data=b"d").cid}
    assert [es[a].start for a in Selection("range", 5, 11).choose(es)] == [0, 10]
    assert Selection("range", 30, 40).choose(es) == [] and Selection("latest").choose({}) == []


def test_decode_empty_index_and_garbage():
    assert cindex.decode_index(b"") == {}
    from core.archive.errors import DecodeError
    with pytest.raises(DecodeError):
        cindex.decode_index(b"\x0a\x05hello")


def test_link_kind_tells_backends_apart():
    from core.codex.backend import link_kind
    cid = str(manifest_for(b"index").cid())
    assert link_kind(cid) == "codex" and link_kind(" " + cid + "\n") == "codex"
    assert link_kind("magnet:?xt=urn:btih:" + "0" * 40) == "magnet"
    assert link_kind(str(tree_cid(b"x"))) is None and link_kind("hello") is None and link_kind("") is None
