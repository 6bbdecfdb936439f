"""CID computation against CODEX.md's vectors (CIDs printed by real nodes) and the tree rules."""
import hashlib

import pytest

from core.codex.cid import (BLOCK_SIZE, MANIFEST_CODEC, ROOT_CODEC, Cid, CidError, b58decode, b58encode,
                            merkle_root, parse_cid, split_blocks, tree_cid)
from core.codex.manifest import LAYOUT_2025, LAYOUT_2026, manifest_cid


def test_vector_tree_cid_some_file_contents():
    assert str(tree_cid(b"some file contents")) == "zDzSvJTezk7bJNQqFq8k1iHXY84psNuUfZVusA5bBQQUSuyzDSVL"


def test_vector_hello_world_with_filename_and_mimetype_2025():
    cid = manifest_cid(b"Hello World!", "hello.txt", "text/plain", layout=LAYOUT_2025)
    assert str(cid) == "zDvZRwzmAkhzDRPH5EW242gJBNZ2T7aoH2v1fVH66FxXL4kSbvyM"


@pytest.mark.parametrize("layout", [LAYOUT_2025, LAYOUT_2026])
def test_vector_hello_world_without_metadata_same_in_both_layouts(layout):
    assert str(manifest_cid(b"Hello World!", layout=layout)) == "zDvZRwzm4JvW4GEe2bXkCWH5nkmrzm5xMsZoqcePmwq8AB93kDya"


def test_metadata_changes_cid_and_layouts_differ_with_metadata():
    a = manifest_cid(b"Hello World!", "hello.txt", "text/plain", layout=LAYOUT_2025)
    b = manifest_cid(b"Hello World!", "hello.txt", "text/plain", layout=LAYOUT_2026)
    assert a != b and a != manifest_cid(b"Hello World!")


def test_prefixes_and_length():
    m, t = str(manifest_cid(b"abc")), str(tree_cid(b"abc"))
    assert m.startswith("zDvZRwz") and t.startswith("zDzSvJT") and len(m) == len(t) == 52


def sha(b):
    return hashlib.sha256(b).digest()


def test_single_leaf_hashed_once_with_key_3():
    leaf = sha(b"x")
    assert merkle_root([leaf]) == sha(leaf + bytes(32) + b"\x03")


def test_two_and_three_leaves_keys():
    a, b, c = sha(b"a"), sha(b"b"), sha(b"c")
    assert merkle_root([a, b]) == sha(a + b + b"\x01")
    ab, c0 = sha(a + b + b"\x01"), sha(c + bytes(32) + b"\x03")
    assert merkle_root([a, b, c]) == sha(ab + c0 + b"\x00")


def test_five_leaves_odd_above_bottom_uses_key_2():
    ls = [sha(bytes([i])) for i in range(5)]
    l1 = [sha(ls[0] + ls[1] + b"\x01"), sha(ls[2] + ls[3] + b"\x01"), sha(ls[4] + bytes(32) + b"\x03")]
    l2 = [sha(l1[0] + l1[1] + b"\x00"), sha(l1[2] + bytes(32) + b"\x02")]
    assert merkle_root(ls) == sha(l2[0] + l2[1] + b"\x00")


def test_blocks_zero_padded_and_multi_block_tree():
    data = b"q" * (BLOCK_SIZE + 10)
    blocks = split_blocks(data)
    assert len(blocks) == 2 and blocks[1] == b"q" * 10 + bytes(BLOCK_SIZE - 10)
    assert tree_cid(data).digest == sha(sha(blocks[0]) + sha(blocks[1]) + b"\x01")
    with pytest.raises(ValueError):
        tree_cid(b"")


def test_round_trip_and_errors():
    cid = manifest_cid(b"round trip")
    assert Cid.parse(str(cid)) == cid and parse_cid(str(cid)).codec == MANIFEST_CODEC
    assert b58decode(b58encode(b"\0\0abc")) == b"\0\0abc"
    with pytest.raises(CidError):
        parse_cid(str(tree_cid(b"x")))           # a tree CID is not a manifest CID
    assert parse_cid(str(tree_cid(b"x")), ROOT_CODEC).codec == ROOT_CODEC
    for bad in ["", "z", "Qm123", "z0OIl", "zDvZRwz", str(cid)[:-2]]:
        with pytest.raises(CidError):
            parse_cid(bad)


def test_a_cid_text_longer_than_any_of_ours_is_refused_before_decoding():
    """base58 decoding is quadratic in the length: a link or an index entry of 160k characters took ~5 s. Ours are
    ~52 characters; anything over MAX_CID_TEXT is refused at once, whatever it holds."""
    from core.codex.backend import link_kind
    from core.codex.cid import MAX_CID_TEXT, Cid, CidError, is_cid
    long = "z" + "2" * 160_000
    with pytest.raises(CidError) as e:
        Cid.parse(long)
    assert str(e.value) == f"a CID of 160001 characters is not one of ours (at most {MAX_CID_TEXT})"
    assert not is_cid(long) and link_kind(long) is None
    with pytest.raises(CidError) as e:
        Cid.parse("z" + "2" * MAX_CID_TEXT)                      # one over: refused the same way
    assert "characters is not one of ours" in str(e.value)
    with pytest.raises(CidError) as e:
        Cid.parse("z" + "2" * (MAX_CID_TEXT - 1))                # at the bound: decoded (and not a CID)
    assert "characters is not one of ours" not in str(e.value)
