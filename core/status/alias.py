"""Status three-word names ("Darkorange Blue Bubblefish"): the name Status shows for a public key.

status-go facts (`protocol/identity/alias`, commit c72f491): the seed is the least significant 64 bits of the key's
X coordinate (`uint64(publicKey.X.Int64())`); a 64-bit Fibonacci LFSR with taps 0xB8 (bits 3, 4, 5, 7) is stepped
three times, each step shifting left by one and feeding in the parity of the tapped bits; the three states, taken
modulo the list lengths, pick adjective, adjective, animal. The word lists are status-go's, in its order
(`alias_adjectives.txt`, `alias_animals.txt` beside this file).

The X coordinate is the same in the compressed (33-byte, community IDs, `zQ3…`) and uncompressed (65-byte, Waku
signatures) forms, so both give the same name. Like status-go, a key that is not a point on secp256k1 is refused.
"""
from __future__ import annotations

import functools
from importlib import resources

from coincurve import PublicKey

from core.hextext import from_hex
from core.status.errors import StatusError

POLY = 0xB8
MASK64 = (1 << 64) - 1


class AliasError(StatusError):
    """Not a secp256k1 public key, so it has no three-word name."""

    code = "bad-public-key"


@functools.cache
def _words(name: str) -> tuple[str, ...]:
    text = resources.files("core.status").joinpath(f"alias_{name}.txt").read_text("utf-8")
    return tuple(w for w in (line.strip() for line in text.splitlines()) if w and not w.startswith("#"))


def adjectives() -> tuple[str, ...]:
    return _words("adjectives")


def animals() -> tuple[str, ...]:
    return _words("animals")


def _lfsr_next(data: int) -> int:
    bit = 0
    for i in range(64):
        if POLY & (1 << i):
            bit ^= data >> i
    return ((data << 1) | (bit & 1)) & MASK64


def name_from_seed(seed: int) -> str:
    """status-go's `generate(seed)`: three LFSR steps pick adjective, adjective, animal."""
    adj, ani = adjectives(), animals()
    s1 = _lfsr_next(seed & MASK64)
    s2 = _lfsr_next(s1)
    s3 = _lfsr_next(s2)
    return f"{adj[s1 % len(adj)]} {adj[s2 % len(adj)]} {ani[s3 % len(ani)]}"


def _key_bytes(pubkey: bytes | bytearray | memoryview | str) -> bytes:
    if isinstance(pubkey, str):
        try:
            return from_hex(pubkey.strip())
        except ValueError:
            raise AliasError(f"public key is not hex: {pubkey[:20]!r}") from None
    return bytes(pubkey)


@functools.lru_cache(maxsize=4096)
def _name_of(raw: bytes) -> str:
    if len(raw) not in (33, 65) or raw[0] not in ((4,) if len(raw) == 65 else (2, 3)):
        raise AliasError(f"a public key is 33 bytes (0x02/0x03 …) or 65 bytes (0x04 …), got {len(raw)} bytes"
                         + (f" starting 0x{raw[0]:02x}" if raw else ""))
    try:
        PublicKey(raw)
    except ValueError:
        raise AliasError("public key is not a point on secp256k1") from None
    return name_from_seed(int.from_bytes(raw[25:33], "big"))    # X is raw[1:33]; its low 64 bits


def three_word_name(pubkey: bytes | bytearray | memoryview | str) -> str:
    """The three-word name Status shows for `pubkey` (bytes, or hex with or without 0x). Raises AliasError."""
    return _name_of(_key_bytes(pubkey))
