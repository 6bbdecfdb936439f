"""Codex (Logos Storage) content identifiers, computed exactly as a Codex node does (CODEX.md "What a CID is").

CIDv1 = varint(1) || varint(codec) || multihash(sha2-256), printed as multibase base58btc ("z...").
Data is cut into 64 KiB blocks (last one zero-padded), hashed with sha256, and folded into a Merkle tree whose
node hash appends a one-byte key: sha256(left || right || key). The manifest is a protobuf Header inside field 1;
its sha256 gives the manifest CID that `POST /data` returns.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

import base58

from core.varint import DecodeError as VarintError, read_varint as _read_varint, write_varint

BLOCK_SIZE = 64 * 1024
SHA2_256 = 0x12
MANIFEST_CODEC = 0xCD01   # codex-manifest: what an upload returns
BLOCK_CODEC = 0xCD02      # codex-block
ROOT_CODEC = 0xCD03       # codex-root: the tree root (treeCid)
CID_V1_NIM = 2            # Nim's CidVersion enum: CIDvIncorrect=0, CIDv0=1, CIDv1=2

KEY_NONE, KEY_BOTTOM, KEY_ODD, KEY_ODD_BOTTOM = 0, 1, 2, 3
_ZERO = bytes(32)
# A CIDv1 of ours is ~52 base58 characters; base58 decoding is quadratic in the length, and a link or an index
# entry from outside can be megabytes: a longer text is refused before it is decoded (160k characters took 5 s).
MAX_CID_TEXT = 128


class CidError(ValueError):
    """Not a CID we understand (bad multibase, varint, codec or digest)."""


# ---- base58btc / varint ---------------------------------------------------------------------------------------

def b58encode(data: bytes) -> str:
    return base58.b58encode(data).decode("ascii")


def b58decode(text: str) -> bytes:
    try:
        return base58.b58decode(text)
    except ValueError:
        raise CidError(f"{text[:80]!r} is not base58btc") from None


def varint(n: int) -> bytes:
    return write_varint(n)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, next position); at most 10 bytes, as protobuf and multiformats allow."""
    try:
        return _read_varint(buf, pos)
    except VarintError as e:
        raise CidError(str(e)) from None


# ---- CIDs -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Cid:
    codec: int
    digest: bytes            # 32-byte sha2-256 digest
    hash_code: int = SHA2_256

    @property
    def binary(self) -> bytes:
        return varint(1) + varint(self.codec) + varint(self.hash_code) + varint(len(self.digest)) + self.digest

    def __str__(self) -> str:
        return "z" + b58encode(self.binary)

    @classmethod
    def from_binary(cls, raw: bytes) -> "Cid":
        version, pos = read_varint(raw, 0)
        if version != 1:
            raise CidError(f"CID version {version} is not 1")
        codec, pos = read_varint(raw, pos)
        hcode, pos = read_varint(raw, pos)
        length, pos = read_varint(raw, pos)
        digest = raw[pos:]
        if hcode != SHA2_256 or length != 32 or len(digest) != 32:
            raise CidError("CID multihash is not a 32-byte sha2-256 digest")
        return cls(codec, bytes(digest), hcode)

    @classmethod
    def parse(cls, text: str) -> "Cid":
        if not isinstance(text, str) or len(text) < 2 or text[0] != "z":
            raise CidError(f"{text[:80]!r} is not a base58btc (z...) CIDv1")
        if len(text) > MAX_CID_TEXT:
            raise CidError(f"a CID of {len(text)} characters is not one of ours (at most {MAX_CID_TEXT})")
        return cls.from_binary(b58decode(text[1:]))


def parse_cid(text: str, codec: int | None = MANIFEST_CODEC) -> Cid:
    """Parse and check the codec (default: a manifest CID, the only kind the REST API hands out)."""
    cid = Cid.parse(text.strip())
    if codec is not None and cid.codec != codec:
        raise CidError(f"CID codec 0x{cid.codec:x} is not 0x{codec:x}")
    return cid


def is_cid(text: str) -> bool:
    try:
        parse_cid(text)
        return True
    except CidError:
        return False


# ---- Merkle tree ----------------------------------------------------------------------------------------------

def split_blocks(data: bytes, block_size: int = BLOCK_SIZE) -> list[bytes]:
    """64 KiB blocks; the last one zero-padded. Empty data has no blocks (a node refuses to store it)."""
    blocks = [data[i:i + block_size] for i in range(0, len(data), block_size)]
    if blocks and len(blocks[-1]) < block_size:
        blocks[-1] = blocks[-1] + bytes(block_size - len(blocks[-1]))
    return blocks


def _compress(left: bytes, right: bytes, key: int) -> bytes:
    return hashlib.sha256(left + right + bytes([key])).digest()


def merkle_root(leaves: Iterable[bytes]) -> bytes:
    layer = list(leaves)
    if not layer:
        raise ValueError("a Merkle tree needs at least one leaf")
    bottom = True
    while True:
        nxt = []
        for i in range(0, len(layer), 2):
            if i + 1 < len(layer):
                nxt.append(_compress(layer[i], layer[i + 1], KEY_BOTTOM if bottom else KEY_NONE))
            else:
                nxt.append(_compress(layer[i], _ZERO, KEY_ODD_BOTTOM if bottom else KEY_ODD))
        layer, bottom = nxt, False
        if len(layer) == 1:
            return layer[0]


def block_cid(block: bytes) -> Cid:
    return Cid(BLOCK_CODEC, hashlib.sha256(block).digest())


def tree_cid(data: bytes, block_size: int = BLOCK_SIZE) -> Cid:
    if not data:
        raise ValueError("empty data has no tree (a Codex node answers 500 to an empty upload)")
    return Cid(ROOT_CODEC, merkle_root(block_digests(data, block_size)))


def block_digests(data: bytes, block_size: int = BLOCK_SIZE) -> list[bytes]:
    """sha256 of each (zero-padded) block, without copying the whole blocks."""
    view = memoryview(data)
    out = [hashlib.sha256(view[i:i + block_size]).digest() for i in range(0, len(data) - block_size + 1, block_size)]
    tail = len(data) % block_size
    if tail:
        out.append(hashlib.sha256(bytes(view[len(data) - tail:]) + bytes(block_size - tail)).digest())
    return out
