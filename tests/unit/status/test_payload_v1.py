import random

import pytest
from Crypto.Cipher import AES
from hypothesis import given, settings, strategies as st

from core.archive.codec import keccak256
from core.status import payload_v1
from core.status.errors import PayloadError

KEY = keccak256(b"chat key")
OTHER = keccak256(b"other chat key")


@pytest.mark.parametrize("size", [0, 1, 255, 256, 300, 65535, 65536, 70000])
@pytest.mark.parametrize("signed", [False, True])
def test_round_trip(size, signed, community):
    data = random.Random(size).randbytes(size)
    env = payload_v1.encrypt(data, KEY, signer=community.private_key if signed else None)
    out = payload_v1.decrypt(env, KEY)
    assert out.data == data
    assert out.public_key == (community.public_key if signed else None)
    assert (out.signature is not None) == signed
    # go-waku's default padding makes the plaintext (without nonce and tag) a multiple of 256
    assert (len(env) - 12 - 16) % 256 == 0


def test_layout_flags_size_field_and_given_padding(community):
    nonce = bytes(range(12))
    env = payload_v1.encrypt(b"\xaa" * 300, KEY, signer=community.private_key, padding=b"\x07" * 5, nonce=nonce)
    assert env[-12:] == nonce
    pt = AES.new(KEY, AES.MODE_GCM, nonce=nonce).decrypt_and_verify(env[:-28], env[-28:-12])
    assert pt[0] == 0x04 | 2                      # signature flag, 2-byte size field
    assert pt[1:3] == (300).to_bytes(2, "little")
    assert pt[3:303] == b"\xaa" * 300 and pt[303:308] == b"\x07" * 5 and len(pt) == 308 + 65
    out = payload_v1.decrypt(env, KEY)
    assert out.padding == b"\x07" * 5 and out.signature == pt[-65:]


def test_unsigned_flag_and_random_padding_is_injected():
    env = payload_v1.encrypt(b"hi", KEY, random_bytes=lambda n: b"\x01" * n)
    pt = AES.new(KEY, AES.MODE_GCM, nonce=env[-12:]).decrypt_and_verify(env[:-28], env[-28:-12])
    assert pt[0] == 1 and pt[1] == 2 and pt[2:4] == b"hi" and set(pt[4:]) == {1} and len(pt) == 256
    assert env[-12:] == b"\x01" * 12
    # same injected randomness -> same bytes (the traffic generator relies on it)
    assert env == payload_v1.encrypt(b"hi", KEY, random_bytes=lambda n: b"\x01" * n)


def test_wrong_key_fails_cleanly(community):
    env = payload_v1.encrypt(b"secret", KEY, signer=community.private_key)
    with pytest.raises(PayloadError) as e:
        payload_v1.decrypt(env, OTHER)
    assert e.value.code == "wrong-key-or-tampered"


@pytest.mark.parametrize("key", [b"", b"\x01" * 16, b"\x00" * 32])
def test_bad_keys(key):
    with pytest.raises(PayloadError):
        payload_v1.encrypt(b"x", key)
    with pytest.raises(PayloadError):
        payload_v1.decrypt(b"\x01" * 64, key)


ENVELOPE = payload_v1.encrypt(b"hello status", KEY, signer=None, nonce=b"\x05" * 12, padding=b"\x00" * 10)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(ENVELOPE) - 1))
def test_fuzz_truncated_envelopes_fail_cleanly(n):
    with pytest.raises(PayloadError):
        payload_v1.decrypt(ENVELOPE[:n], KEY)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(ENVELOPE) - 1), st.integers(min_value=1, max_value=255))
def test_fuzz_garbled_envelopes_fail_cleanly(pos, flip):
    bad = bytearray(ENVELOPE)
    bad[pos] ^= flip
    with pytest.raises(PayloadError):
        payload_v1.decrypt(bytes(bad), KEY)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_arbitrary_envelopes_fail_cleanly(blob):
    with pytest.raises(PayloadError):
        payload_v1.decrypt(blob, KEY)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_authenticated_garbage_plaintext_parses_or_fails_cleanly(blob):
    """Bytes that authenticate (right key) but are not a valid v1 structure: the parser itself is fuzzed."""
    nonce = b"\x09" * 12
    ct, tag = AES.new(KEY, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(blob)
    try:
        out = payload_v1.decrypt(ct + tag + nonce, KEY)
    except PayloadError:
        return
    assert len(out.data) + len(out.padding) <= len(blob)


def test_signature_over_changed_plaintext_recovers_another_key(community):
    """A signed plaintext whose body changed (re-encrypted by someone holding the chat key) no longer
    recovers the signer: receivers compare the recovered key, so the forgery is rejected."""
    pt = bytearray(payload_v1.plaintext(b"original", signer=community.private_key, padding=b"\x01"))
    pt[2] ^= 0xFF
    nonce = b"\x02" * 12
    ct, tag = AES.new(KEY, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(bytes(pt))
    try:
        out = payload_v1.decrypt(ct + tag + nonce, KEY)
    except PayloadError:
        return
    assert out.public_key != community.public_key
