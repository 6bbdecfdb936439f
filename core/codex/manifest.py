"""The Codex manifest block: encode (to compute CIDs) and decode (fuzzed: it comes from outside).

Header (field 1 of the manifest) as nim-codex writes it: 1 treeCid bytes, 2 blockSize, 3 datasetSize,
4 block codec (0xCD02), 5 hash codec (0x12), 6 CID version (2 = Nim's CIDv1). Then the 2025 layout has
7 erasure info (protected datasets only), 8 filename, 9 mimetype; the 2026 Logos Storage layout dropped erasure
coding and has 7 filename, 8 mimetype. Without filename and mimetype both layouts give the same bytes.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from core.codex.cid import (BLOCK_CODEC, BLOCK_SIZE, CID_V1_NIM, MANIFEST_CODEC, ROOT_CODEC, SHA2_256, Cid,
                            CidError, tree_cid, varint)
from core.varint import DecodeError as VarintError, iter_fields

LAYOUT_2025 = "2025"
LAYOUT_2026 = "2026"
MAX_MANIFEST_BYTES = 64 * 1024


class ManifestError(ValueError):
    """A manifest block that does not decode; str() says why."""


@dataclass(frozen=True, slots=True)
class Manifest:
    tree_cid: Cid
    dataset_size: int
    block_size: int = BLOCK_SIZE
    filename: str | None = None
    mimetype: str | None = None
    protected: bool = False
    codec: int = BLOCK_CODEC
    hash_codec: int = SHA2_256
    version: int = CID_V1_NIM

    @property
    def blocks(self) -> int:
        return -(-self.dataset_size // self.block_size) if self.block_size else 0

    def encode(self, layout: str = LAYOUT_2025) -> bytes:
        if layout not in (LAYOUT_2025, LAYOUT_2026):
            raise ValueError(f"unknown manifest layout {layout!r}")
        if self.protected:
            raise ValueError("encoding erasure-coded (protected) manifests is not supported")
        h = (_field_bytes(1, self.tree_cid.binary) + _field_varint(2, self.block_size)
             + _field_varint(3, self.dataset_size) + _field_varint(4, self.codec)
             + _field_varint(5, self.hash_codec) + _field_varint(6, self.version))
        fname_field, mime_field = (8, 9) if layout == LAYOUT_2025 else (7, 8)
        if self.filename:
            h += _field_bytes(fname_field, self.filename.encode())
        if self.mimetype:
            h += _field_bytes(mime_field, self.mimetype.encode())
        return _field_bytes(1, h)

    def cid(self, layout: str = LAYOUT_2025) -> Cid:
        return Cid(MANIFEST_CODEC, hashlib.sha256(self.encode(layout)).digest())

    def to_json(self) -> dict:
        """The shape of the REST API's manifest JSON."""
        return {"treeCid": str(self.tree_cid), "datasetSize": self.dataset_size, "blockSize": self.block_size,
                "protected": self.protected, "filename": self.filename, "mimetype": self.mimetype}


def manifest_for(data: bytes, filename: str | None = None, mimetype: str | None = None) -> Manifest:
    return Manifest(tree_cid(data), len(data), BLOCK_SIZE, filename, mimetype)


def manifest_cid(data: bytes, filename: str | None = None, mimetype: str | None = None,
                 layout: str = LAYOUT_2025) -> Cid:
    """The CID `POST /data` returns for these bytes (upload archives without filename and mimetype)."""
    return manifest_for(data, filename, mimetype).cid(layout)


# ---- minimal protobuf -----------------------------------------------------------------------------------------

def _field_varint(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value)


def _field_bytes(num: int, value: bytes) -> bytes:
    return varint(num << 3 | 2) + varint(len(value)) + value


def parse_fields(buf: bytes) -> dict[int, list[int | bytes]]:
    """Every field of one protobuf message: {number: [values]} (core.varint.iter_fields). Varints and
    length-delimited only (the only wire types nim-codex writes); fixed32/64 are skipped; groups are refused."""
    fields: dict[int, list[int | bytes]] = {}
    try:
        for num, wt, val in iter_fields(buf):
            if wt in (0, 2):
                fields.setdefault(num, []).append(val)
    except VarintError as e:
        raise ManifestError(f"manifest protobuf: {e}") from None
    return fields


def _one(fields: dict, num: int, kind: type, name: str, required: bool = True):
    vals = fields.get(num)
    if not vals:
        if required:
            raise ManifestError(f"manifest header has no {name} (field {num})")
        return None
    v = vals[-1]
    if not isinstance(v, kind):
        raise ManifestError(f"manifest field {name} has the wrong wire type")
    return v


def _text(raw: bytes | None, name: str) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"manifest {name} is not UTF-8") from None


def detect_layout(header: dict[int, list]) -> str:
    """2025 if field 9 (mimetype) is present or field 7 is not text (erasure info); else 2026."""
    if 9 in header:
        return LAYOUT_2025
    f7 = header.get(7)
    if f7 and isinstance(f7[-1], bytes):
        try:
            text = f7[-1].decode("utf-8")
            if text.isprintable():
                return LAYOUT_2026
        except UnicodeDecodeError:
            pass
        return LAYOUT_2025
    return LAYOUT_2025 if 8 not in header else LAYOUT_2026 if 7 in header else LAYOUT_2025


def decode_manifest(raw: bytes, layout: str | None = None) -> tuple[Manifest, str]:
    """(manifest, layout). layout None = detect. Raises ManifestError with a reason on any bad input."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"manifest block of {len(raw)} bytes is implausibly large")
    outer = parse_fields(raw)
    hdr_raw = _one(outer, 1, bytes, "header")
    header = parse_fields(hdr_raw)
    layout = layout or detect_layout(header)
    try:
        tree = Cid.from_binary(_one(header, 1, bytes, "treeCid"))
    except CidError as e:
        raise ManifestError(f"manifest treeCid: {e}") from None
    if tree.codec != ROOT_CODEC:
        raise ManifestError(f"manifest treeCid codec 0x{tree.codec:x} is not codex-root (0x{ROOT_CODEC:x})")
    block_size = _one(header, 2, int, "blockSize")
    dataset_size = _one(header, 3, int, "datasetSize")
    if block_size <= 0:
        raise ManifestError("manifest blockSize is zero")
    codec = _one(header, 4, int, "codec", False) or BLOCK_CODEC
    hcodec = _one(header, 5, int, "hcodec", False) or SHA2_256
    version = _one(header, 6, int, "version", False) or CID_V1_NIM
    if layout == LAYOUT_2025:
        protected = 7 in header
        fname, mime = _one(header, 8, bytes, "filename", False), _one(header, 9, bytes, "mimetype", False)
    else:
        protected = False
        fname, mime = _one(header, 7, bytes, "filename", False), _one(header, 8, bytes, "mimetype", False)
    m = Manifest(tree, dataset_size, block_size, _text(fname, "filename"), _text(mime, "mimetype"), protected,
                 codec, hcodec, version)
    return m, layout


def manifest_from_json(obj: object) -> Manifest:
    """The REST API's manifest JSON (`{"cid", "manifest": {...}}` or the inner object)."""
    if isinstance(obj, dict) and isinstance(obj.get("manifest"), dict):
        obj = obj["manifest"]
    if not isinstance(obj, dict):
        raise ManifestError("manifest JSON is not an object")
    try:
        tree = Cid.parse(str(obj["treeCid"]))
        size, bsize = obj["datasetSize"], obj.get("blockSize", BLOCK_SIZE)
    except (KeyError, CidError) as e:
        raise ManifestError(f"manifest JSON lacks a valid treeCid/datasetSize: {e}") from None
    if not isinstance(size, int) or not isinstance(bsize, int) or size < 0 or bsize <= 0:
        raise ManifestError("manifest JSON datasetSize/blockSize are not valid sizes")
    return Manifest(tree, size, bsize, obj.get("filename") or None, obj.get("mimetype") or None,
                    bool(obj.get("protected", False)))
