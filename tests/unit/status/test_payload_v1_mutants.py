"""Payload v1 (core/status/payload_v1.py): every reason a person or log sees, each code, and the edges of the
parser, pinned against the survivors of `make mutation` (docs/QUALITY.md). Plaintexts are built here by hand from
the layout in the module's doc (flags, little-endian size, payload, padding, signature), not by the code under
test, and encrypted with pycryptodome's AES-GCM directly."""
from __future__ import annotations

import pytest
from Crypto.Cipher import AES

from core.archive.codec import keccak256
from core.status import payload_v1 as p1
from core.status.errors import PayloadError
from core.status.identity import sign_digest

KEY = keccak256(b"chat key")
NONCE = bytes(range(12))


def seal_raw(plain: bytes, key: bytes = KEY, nonce: bytes = NONCE) -> bytes:
    ct, tag = AES.new(key, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(plain)
    return ct + tag + nonce


def signed_plain(body: bytes, key) -> bytes:
    """body starts with the flags byte; sets the signature flag, then appends sign(keccak256(body))."""
    body = bytes([body[0] | 0x04]) + body[1:]
    return body + sign_digest(key, keccak256(body))


def test_constants_are_the_wire_values():
    assert (p1.SIGNATURE_FLAG, p1.SIZE_MASK, p1.SIGNATURE_LENGTH) == (0x04, 0x03, 65)
    assert (p1.NONCE_LENGTH, p1.TAG_LENGTH, p1.PAD_SIZE_LIMIT, p1.MAX_PAYLOAD) == (12, 16, 256, 16_777_215)


@pytest.mark.parametrize("n,want", [(0, 1), (255, 1), (256, 2), (65535, 2), (65536, 3), (16_777_215, 3),
                                    (16_777_216, 4)])
def test_size_field_length_boundaries(n, want):
    assert p1._size_field_length(n) == want


@pytest.mark.parametrize("n,signed,want", [(0, False, 254), (253, False, 1), (254, False, 256), (10, True, 179),
                                           (188, True, 1), (189, True, 256), (256, False, 253)])
def test_default_padding_length(n, signed, want):
    # go-waku: flags(1) + size field + payload (+ 65) padded to the next multiple of 256, a whole 256 when aligned
    assert p1.default_padding_length(n, signed) == want


@pytest.mark.parametrize("key,msg", [(b"k" * 31, "symmetric key must be 32 bytes, got 31"),
                                     (b"k" * 33, "symmetric key must be 32 bytes, got 33"),
                                     (bytes(32), "symmetric key is all zeros")])
def test_bad_keys_are_refused_with_reason(key, msg):
    for call in (lambda: p1.encrypt(b"x", key), lambda: p1.decrypt(seal_raw(b"\x01\x00"), key)):
        with pytest.raises(PayloadError) as e:
            call()
        assert str(e.value) == msg and e.value.code == "bad-key"


def test_a_key_with_one_nonzero_byte_is_a_key():
    key = bytes(31) + b"\x01"
    env = p1.encrypt(b"abc", key, padding=b"\x00", nonce=NONCE)
    assert p1.decrypt(env, key).data == b"abc"


def test_too_large_payload_message():
    class Big(bytes):
        def __len__(self):
            return p1.MAX_PAYLOAD + 1
    with pytest.raises(PayloadError) as e:
        p1.plaintext(Big(b""))
    assert str(e.value) == "payload of 16777216 bytes is too large for payload v1" and e.value.code == "too-large"


def test_largest_payload_is_accepted():
    out = p1.plaintext(b"\x00" * p1.MAX_PAYLOAD, padding=b"\x01")
    assert out[:4] == b"\x03\xff\xff\xff" and len(out) == 4 + p1.MAX_PAYLOAD + 1


def test_plaintext_layout_unsigned_and_random_padding_length():
    asked = []

    def rnd(n):
        asked.append(n)
        return b"\x09" * n
    out = p1.plaintext(b"\xaa" * 300, random_bytes=rnd)
    assert asked == [p1.default_padding_length(300, False)] == [209]
    assert out == b"\x02" + (300).to_bytes(2, "little") + b"\xaa" * 300 + b"\x09" * 209


def test_empty_padding_means_random_padding_and_signed_length_counts_the_signature(community):
    asked = []

    def rnd(n):
        asked.append(n)
        return b"\x05" * n
    out = p1.plaintext(b"hi", signer=community.private_key, padding=b"", random_bytes=rnd)
    assert asked == [256 - (1 + 1 + 2 + 65)]
    assert out[0] == 0x04 | 1 and out[1] == 2 and out[2:4] == b"hi" and len(out) == 256
    assert out[:-65] == bytes([0x05, 2]) + b"hi" + b"\x05" * asked[0]
    assert p1.parse_plaintext(out).public_key == community.public_key


def test_nonce_length_is_checked_and_random_nonce_is_twelve_bytes():
    with pytest.raises(PayloadError) as e:
        p1.encrypt(b"x", KEY, padding=b"\x00", nonce=b"\x00" * 11)
    assert str(e.value) == "nonce must be 12 bytes" and e.value.code == "bad-nonce"
    asked = []

    def rnd(n):
        asked.append(n)
        return b"\x07" * n
    env = p1.encrypt(b"x", KEY, padding=b"\x00", random_bytes=rnd)
    assert asked == [12] and env[-12:] == b"\x07" * 12
    assert AES.new(KEY, AES.MODE_GCM, nonce=env[-12:]).decrypt_and_verify(env[:-28], env[-28:-12]) == b"\x01\x01x\x00"


@pytest.mark.parametrize("length", [0, 1, 28])
def test_short_envelope_message(length):
    with pytest.raises(PayloadError) as e:
        p1.decrypt(b"\x00" * length, KEY)
    assert str(e.value) == f"envelope of {length} bytes is too short for payload v1" and e.value.code == "truncated"


def test_shortest_envelope_is_tried():
    # 29 bytes (one byte of ciphertext) passes the length check and fails authentication instead
    with pytest.raises(PayloadError) as e:
        p1.decrypt(b"\x00" * 29, KEY)
    assert e.value.code == "wrong-key-or-tampered"
    assert str(e.value) == "envelope does not authenticate: wrong key, or truncated/changed bytes"
    assert p1.decrypt(seal_raw(b"\x00"), KEY).data == b""


def test_wrong_key_message():
    with pytest.raises(PayloadError) as e:
        p1.decrypt(seal_raw(b"\x01\x01x"), keccak256(b"other"))
    assert str(e.value) == "envelope does not authenticate: wrong key, or truncated/changed bytes"
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_empty_plaintext_message():
    with pytest.raises(PayloadError) as e:      # decrypt never gets here (a 28-byte envelope is too short)
        p1.parse_plaintext(b"")
    assert str(e.value) == "payload v1 data is empty" and e.value.code == "bad-length"


@pytest.mark.parametrize("length", [1, 65, 66])
def test_signed_but_too_short(length):
    with pytest.raises(PayloadError) as e:
        p1.parse_plaintext(b"\x04" + b"\x00" * (length - 1))
    assert str(e.value) == "payload v1 is flagged as signed but too short for a signature"
    assert e.value.code == "bad-length"


def test_shortest_signed_plaintext_parses(community):
    plain = signed_plain(b"\x00", community.private_key)        # flags, then the signature
    assert len(plain) == 66
    with pytest.raises(PayloadError) as e:                     # end == 1: refused (go-waku needs flags + 1)
        p1.parse_plaintext(plain)
    assert e.value.code == "bad-length"
    plain = signed_plain(b"\x00\x07", community.private_key)    # 67 bytes: flags, one padding byte, signature
    out = p1.parse_plaintext(plain)
    assert (out.data, out.padding, out.signature) == (b"", b"\x07", plain[2:])
    assert out.public_key == community.public_key


def test_bad_signature_message():
    plain = b"\x05\x01x" + b"\x00" * 64 + b"\x09"           # V = 9
    with pytest.raises(PayloadError) as e:
        p1.parse_plaintext(plain)
    assert str(e.value) == "payload v1 signature is invalid: signature recovery id V=9 is not 0..3"
    assert e.value.code == "bad-signature" and e.value.__suppress_context__


def test_signature_covers_flags_size_payload_padding_only(community):
    plain = signed_plain(b"\x01\x03abcPAD", community.private_key)
    out = p1.parse_plaintext(plain)
    assert (out.data, out.padding, out.signature, out.public_key) == (b"abc", b"PAD", plain[-65:],
                                                                      community.public_key)
    tampered = plain[:4] + b"X" + plain[5:]                   # a changed payload byte recovers another key
    assert p1.parse_plaintext(tampered).public_key != community.public_key


def test_size_field_past_the_end():
    with pytest.raises(PayloadError) as e:
        p1.parse_plaintext(b"\x03\x01\x00")                 # 3-byte size field, two bytes left
    assert str(e.value) == "payload v1 size field runs past the end" and e.value.code == "bad-length"
    assert p1.parse_plaintext(b"\x03\x00\x00\x00").data == b""   # exactly fits


def test_size_past_the_end_names_the_size():
    with pytest.raises(PayloadError) as e:
        p1.parse_plaintext(b"\x01\x04abc")
    assert str(e.value) == "payload v1 size 4 runs past the end" and e.value.code == "bad-length"
    out = p1.parse_plaintext(b"\x01\x03abc")                 # exactly fits, no padding
    assert (out.data, out.padding, out.signature, out.public_key) == (b"abc", b"", None, None)


def test_size_is_little_endian_and_padding_follows():
    out = p1.parse_plaintext(b"\x02\x02\x00hiPADDING")
    assert (out.data, out.padding) == (b"hi", b"PADDING")
    out = p1.parse_plaintext(b"\x00rest")                  # no size field: no data, everything is padding
    assert (out.data, out.padding) == (b"", b"rest")


def test_flag_bits_other_than_size_and_signature_are_ignored():
    assert p1.parse_plaintext(b"\xf9\x02hi").data == b"hi"     # 0xf9 & 3 == 1, bit 2 clear
