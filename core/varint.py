"""Protobuf and multiformats varints (unsigned LEB128), zigzag, and the one walker over raw protobuf fields
(next_field, and iter_fields on top of it), shared by the hand codecs (Waku messages and framing, CIDs, Codex
manifests, community descriptions) and the archive code that must look at bytes before parsing them (rebuilding an
index from `data`, refusing message bombs)."""
from __future__ import annotations


class DecodeError(ValueError):
    """Malformed bytes from the network."""


MAX_VARINT_BYTES = 10
MAX_FIELD_NUMBER = 2**29 - 1          # protobuf's largest field number (a tag is a 32-bit varint)


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


def read_varint(data: bytes, pos: int = 0, end: int | None = None) -> tuple[int, int]:
    """Return (value, next_pos), reading no further than `end`. Raises DecodeError on truncation, overlong
    encodings and values above 64 bits."""
    end = len(data) if end is None else end
    result = shift = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= end:
            raise DecodeError("truncated varint")
        b = data[pos + i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result >> 64:          # a tenth byte above 1: status-go's Go protobuf refuses it (upb keeps 64 bits)
                raise DecodeError("varint above 64 bits")
            return result, pos + i + 1
        shift += 7
    raise DecodeError("varint longer than 10 bytes")


def zigzag_encode(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF


def zigzag_decode(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def next_field(data, pos: int, end: int | None = None) -> tuple[int, int, int]:
    """The protobuf field whose tag starts at `data[pos]`: (field number, wire type, position after its value).
    Raises DecodeError for a truncated tag or length, or a wire type that carries no length we can skip
    (groups, 6, 7). The value may run past `end`: the caller decides what that means."""
    end = len(data) if end is None else end
    if pos + 1 < end and data[pos] < 0x80 and data[pos + 1] < 0x80:
        # one-byte tag and one-byte value or length, as in most fields: ~2.5x faster than the general path below,
        # which is what a message bomb's million-field walk costs (codec.parse_archive_pb)
        tag = data[pos]
        if tag & 7 == 0:
            return tag >> 3, 0, pos + 2
        if tag & 7 == 2:
            return tag >> 3, 2, pos + 2 + data[pos + 1]
    tag, nxt = read_varint(data, pos, end)
    wire = tag & 7
    if wire == 0:
        _, nxt = read_varint(data, nxt, end)
    elif wire == 1:
        nxt += 8
    elif wire == 2:
        n, nxt = read_varint(data, nxt, end)
        nxt += n
    elif wire == 5:
        nxt += 4
    else:
        raise DecodeError(f"wire type {wire} at byte {pos}")
    return tag >> 3, wire, nxt


def iter_fields(data):
    """(field number, wire type, value) of each top-level field of one protobuf message, as protobuf reads them: a
    varint as int; a length-delimited, 64-bit or 32-bit value as its bytes. Raises DecodeError where protobuf
    refuses the bytes: field number 0 or above 2**29 - 1, a value that runs past the end, wire types 6 and 7; and on
    groups (next_field)."""
    pos, end = 0, len(data)
    while pos < end:
        num, wire, nxt = next_field(data, pos, end)
        if not 0 < num <= MAX_FIELD_NUMBER:
            raise DecodeError(f"field number {num} at byte {pos}")
        if nxt > end:
            raise DecodeError(f"field {num} runs past the end ({nxt} > {end})")
        # the value, after the tag (next_field has read both already: no error left; one byte each, mostly)
        start = pos + 1 if data[pos] < 0x80 else read_varint(data, pos, end)[1]
        if wire == 0:
            yield num, 0, data[start] if data[start] < 0x80 else read_varint(data, start, end)[0]
        elif wire == 2:
            yield num, 2, bytes(data[start + 1 if data[start] < 0x80 else read_varint(data, start, end)[1]:nxt])
        else:
            yield num, wire, bytes(data[start:nxt])
        pos = nxt
