"""Hex text as people and status-go write it: one rule for every reader (issue 20, "one meaning, one place")."""
from __future__ import annotations


def strip_0x(text: str) -> str:
    """`text` without one leading 0x or 0X."""
    return text[2:] if text[:2] in ("0x", "0X") else text


def from_hex(text: str) -> bytes:
    """Hex digits with an optional 0x/0X prefix, in any case. ValueError for anything else, blanks between the
    digits included (bytes.fromhex alone skips them, so "ab cd" would read as two bytes)."""
    digits = strip_0x(text)
    try:
        out = bytes.fromhex(digits)
    except ValueError:
        out = None
    if out is None or 2 * len(out) != len(digits):
        raise ValueError("not hex (only the digits 0-9 and a-f, after an optional 0x)")   # no echo: keys are hex
    return out
