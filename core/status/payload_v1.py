"""26/WAKU2-PAYLOAD version 1, symmetric mode, as go-waku (used by status-go) encodes it.

Plaintext = flags(1) || size(1..3 bytes, little-endian; its length in flags bits 0-1) || payload || padding
|| [signature(65)], where flags bit 2 (0x04) marks the signature. The signature is go-ethereum's [R||S||V] over
keccak256(plaintext without the signature, with the flag already set). Envelope = AES-256-GCM(key, plaintext)
= ciphertext || 16-byte tag || 12-byte nonce. Default padding (go-waku): random bytes bringing
flags+size+payload(+signature) to the next multiple of 256 (a whole 256 when already aligned).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from coincurve import PrivateKey
from Crypto.Cipher import AES

from core.archive.codec import keccak256
from core.status.errors import PayloadError, SignatureError
from core.status.identity import recover_digest, sign_digest

SIGNATURE_FLAG = 0x04
SIZE_MASK = 0x03
SIGNATURE_LENGTH = 65
NONCE_LENGTH = 12
TAG_LENGTH = 16
PAD_SIZE_LIMIT = 256
MAX_PAYLOAD = (1 << 24) - 1     # a 4-byte size field would collide with the signature flag (go-waku quirk)

RandomBytes = Callable[[int], bytes]


@dataclass(frozen=True, slots=True)
class DecodedPayload:
    data: bytes
    padding: bytes
    signature: bytes | None = None
    public_key: bytes | None = None     # 65-byte uncompressed secp256k1 key recovered from the signature


def _size_field_length(n: int) -> int:
    s = 1
    while n >= 256:
        n //= 256
        s += 1
    return s


def default_padding_length(payload_length: int, signed: bool) -> int:
    raw = 1 + _size_field_length(payload_length) + payload_length + (SIGNATURE_LENGTH if signed else 0)
    return PAD_SIZE_LIMIT - raw % PAD_SIZE_LIMIT


def _check_key(key: bytes) -> None:
    if len(key) != 32:
        raise PayloadError(f"symmetric key must be 32 bytes, got {len(key)}", code="bad-key")
    if not any(key):
        raise PayloadError("symmetric key is all zeros", code="bad-key")


def plaintext(payload: bytes, *, signer: PrivateKey | None = None, padding: bytes | None = None,
              random_bytes: RandomBytes = os.urandom) -> bytes:
    """The unencrypted v1 data (flags, size, payload, padding, optional signature)."""
    if len(payload) > MAX_PAYLOAD:
        raise PayloadError(f"payload of {len(payload)} bytes is too large for payload v1", code="too-large")
    n = _size_field_length(len(payload))
    out = bytearray([n])
    out += len(payload).to_bytes(4, "little")[:n]
    out += payload
    if padding is None or len(padding) == 0:     # go-waku: empty padding means "generate random padding"
        padding = random_bytes(default_padding_length(len(payload), signer is not None))
    out += padding
    if signer is not None:
        out[0] |= SIGNATURE_FLAG                 # set before signing, as go-waku does
        out += sign_digest(signer, keccak256(bytes(out)))
    return bytes(out)


def encrypt(payload: bytes, key: bytes, *, signer: PrivateKey | None = None, padding: bytes | None = None,
            nonce: bytes | None = None, random_bytes: RandomBytes = os.urandom) -> bytes:
    """Encode and encrypt a payload-v1 envelope (what goes into WakuMessage.payload with version 1)."""
    _check_key(key)
    data = plaintext(payload, signer=signer, padding=padding, random_bytes=random_bytes)
    nonce = random_bytes(NONCE_LENGTH) if nonce is None else nonce
    if len(nonce) != NONCE_LENGTH:
        raise PayloadError(f"nonce must be {NONCE_LENGTH} bytes", code="bad-nonce")
    ct, tag = AES.new(key, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(data)
    return ct + tag + nonce


def decrypt(envelope: bytes, key: bytes) -> DecodedPayload:
    """Decrypt and parse an envelope. Raises PayloadError (never anything else) for any bad input."""
    _check_key(key)
    envelope = bytes(envelope)
    if len(envelope) < NONCE_LENGTH + TAG_LENGTH + 1:
        raise PayloadError(f"envelope of {len(envelope)} bytes is too short for payload v1", code="truncated")
    nonce = envelope[-NONCE_LENGTH:]
    body, tag = envelope[:-NONCE_LENGTH - TAG_LENGTH], envelope[-NONCE_LENGTH - TAG_LENGTH:-NONCE_LENGTH]
    try:
        data = AES.new(key, AES.MODE_GCM, nonce=nonce).decrypt_and_verify(body, tag)
    except ValueError:
        raise PayloadError("envelope does not authenticate: wrong key, or truncated/changed bytes",
                           code="wrong-key-or-tampered") from None
    return parse_plaintext(data)


def parse_plaintext(data: bytes) -> DecodedPayload:
    """Parse decrypted v1 data as go-waku's validateAndParse does, with reasons."""
    end = len(data)
    if end < 1:
        raise PayloadError("payload v1 data is empty", code="bad-length")
    flags = data[0]
    signature = public_key = None
    if flags & SIGNATURE_FLAG:
        end -= SIGNATURE_LENGTH
        if end <= 1:
            raise PayloadError("payload v1 is flagged as signed but too short for a signature", code="bad-length")
        signature = data[end:end + SIGNATURE_LENGTH]
        try:
            public_key = recover_digest(keccak256(data[:end]), signature)
        except SignatureError as e:
            raise PayloadError(f"payload v1 signature is invalid: {e}", code="bad-signature") from None
    beg, size = 1, 0
    n = flags & SIZE_MASK
    if n:
        if end < beg + n:
            raise PayloadError("payload v1 size field runs past the end", code="bad-length")
        size = int.from_bytes(data[beg:beg + n], "little")
        beg += n
        if beg + size > end:
            raise PayloadError(f"payload v1 size {size} runs past the end", code="bad-length")
    return DecodedPayload(data[beg:beg + size], data[beg + size:end], signature, public_key)
