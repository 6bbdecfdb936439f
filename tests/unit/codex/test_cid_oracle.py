"""An independent oracle for Codex CIDs: a second, deliberately plain implementation written from CODEX.md's
description ("What a CID is"), sharing no code with core.codex (own LEB128, own protobuf bytes, the `base58`
package for multibase). It is itself anchored to the CIDs that real Codex nodes printed (CODEX.md's vectors), and
then checked against core.codex on random data of every block-count shape. The local Codex test node
(tests/support/codex_node.py) computes its CIDs with core.codex, so this is what ties its answers to real nodes'."""
import hashlib

import base58
import pytest
from hypothesis import given, settings, strategies as st

from core.codex.cid import tree_cid
from core.codex.manifest import LAYOUT_2025, LAYOUT_2026, manifest_cid

BLOCK = 65536


def leb128(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def cid_text(codec: int, digest: bytes) -> str:
    return "z" + base58.b58encode(b"\x01" + leb128(codec) + b"\x12\x20" + digest).decode()


def oracle_root(data: bytes) -> bytes:
    blocks = [data[i:i + BLOCK].ljust(BLOCK, b"\0") for i in range(0, len(data), BLOCK)]
    layer = [hashlib.sha256(b).digest() for b in blocks]
    bottom = True
    while True:
        nxt = []
        for i in range(0, len(layer), 2):
            if i + 1 < len(layer):
                nxt.append(hashlib.sha256(layer[i] + layer[i + 1] + bytes([1 if bottom else 0])).digest())
            else:
                nxt.append(hashlib.sha256(layer[i] + bytes(32) + bytes([3 if bottom else 2])).digest())
        layer, bottom = nxt, False
        if len(layer) == 1:
            return layer[0]


def pb_varint(field: int, value: int) -> bytes:
    return leb128(field << 3) + leb128(value)


def pb_bytes(field: int, value: bytes) -> bytes:
    return leb128(field << 3 | 2) + leb128(len(value)) + value


def oracle_manifest_cid(data: bytes, filename: str | None = None, mimetype: str | None = None,
                        layout: str = "2025") -> str:
    tree = b"\x01" + leb128(0xCD03) + b"\x12\x20" + oracle_root(data)
    header = (pb_bytes(1, tree) + pb_varint(2, BLOCK) + pb_varint(3, len(data)) + pb_varint(4, 0xCD02)
              + pb_varint(5, 0x12) + pb_varint(6, 2))
    name_field, mime_field = (8, 9) if layout == "2025" else (7, 8)
    if filename is not None:
        header += pb_bytes(name_field, filename.encode())
    if mimetype is not None:
        header += pb_bytes(mime_field, mimetype.encode())
    return cid_text(0xCD01, hashlib.sha256(pb_bytes(1, header)).digest())


def test_the_oracle_reproduces_the_cids_real_nodes_printed():
    assert cid_text(0xCD03, oracle_root(b"some file contents")) == \
        "zDzSvJTezk7bJNQqFq8k1iHXY84psNuUfZVusA5bBQQUSuyzDSVL"
    assert oracle_manifest_cid(b"Hello World!", "hello.txt", "text/plain") == \
        "zDvZRwzmAkhzDRPH5EW242gJBNZ2T7aoH2v1fVH66FxXL4kSbvyM"
    assert oracle_manifest_cid(b"Hello World!") == "zDvZRwzm4JvW4GEe2bXkCWH5nkmrzm5xMsZoqcePmwq8AB93kDya"


# every tree shape up to 9 leaves (odd nodes on the bottom layer and above), and block-edge sizes
SIZES = [1, BLOCK - 1, BLOCK, BLOCK + 1] + [k * BLOCK + d for k in range(2, 9) for d in (0, 17)]


@pytest.mark.parametrize("size", SIZES)
def test_core_matches_the_oracle_at_every_tree_shape(size):
    data = hashlib.shake_256(size.to_bytes(8, "big")).digest(size)
    assert str(tree_cid(data)) == cid_text(0xCD03, oracle_root(data))
    assert str(manifest_cid(data)) == oracle_manifest_cid(data)
    assert str(manifest_cid(data, layout=LAYOUT_2026)) == oracle_manifest_cid(data, layout="2026")


@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=1, max_size=3 * BLOCK + 5),
       name=st.none() | st.text(min_size=1, max_size=20), mime=st.sampled_from([None, "text/plain",
                                                                               "application/octet-stream"]))
def test_core_matches_the_oracle_on_random_data_and_metadata(data, name, mime):
    for layout, tag in ((LAYOUT_2025, "2025"), (LAYOUT_2026, "2026")):
        assert str(manifest_cid(data, name, mime, layout=layout)) == oracle_manifest_cid(data, name, mime, tag)
