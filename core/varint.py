"""Protobuf and multiformats varints (unsigned LEB128) and zigzag, shared by the hand codecs (Waku framing, CIDs)."""
from __future__ import annotations


class DecodeError(ValueError):
    """Malformed bytes from the network."""


MAX_VARINT_BYTES = 10


def write_varint(value: int) -> bytes:
    if value < 0:
        raise ValueError("varint must be non-negative")
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Return (value, next_pos). Raises DecodeError on truncation or overlong encodings."""
    result = shift = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise DecodeError("truncated varint")
        b = data[pos + i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos + i + 1
        shift += 7
    raise DecodeError("varint longer than 10 bytes")


def zigzag_encode(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF


def zigzag_decode(v: int) -> int:
    return (v >> 1) ^ -(v & 1)
