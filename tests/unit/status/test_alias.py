"""Status three-word names (core.status.alias) against the names Status itself gives known keys.

Vectors: status-go `protocol/identity/alias/generate_test.go` (seed 42, the 0x04eedb… key), status-go
`api/backend_test.go` test settings (a key with its account name), and status-web `packages/status-js/src/utils/
generate-username.test.ts` (three keys), which reimplements the same algorithm for the web."""
from __future__ import annotations

import pytest
from coincurve import PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from core.status import share_link
from core.status.alias import AliasError, adjectives, animals, name_from_seed, three_word_name

STATUS_NAMES = {
    "0x04eedbaafd6adf4a9233a13e7b1c3c14461fffeba2e9054b8d456ce5f6ebeafadcbf3dce3716253fbc391277fa5a086b60b283daf61f"
    "b5b1f26895f456c2f31ae3": "Darkorange Blue Bubblefish",
    "0x04ac419dac9a8bbb58825a3cde60eef0ee71b8cf6c63df611eeefc8e7aac7c79b55954b679d24cf5ec82da7ed921caf240628a9bfb34"
    "50c5111a9cffe54e631811": "Bumpy Absolute Crustacean",
    "0x0403aeff2fdd0044b136e06afa6d69bb563bb7b3fd518bb30c0d5115a2e020840a2247966c2cc9953ed02cc391e8883b3319f63a31e5"
    "f5369d0fb72b62b23dfcbd": "Back Careful Cuckoo",
    "0x04211fe0f69772ecf7eb0b5bfc7678672508a9fb01f2d699096f0d59ef7fe1a0cb1e648a80190db1c0f5f088872444d846f2956d0bd8"
    "4069f3f9f69335af852ac0": "Jittery Cornflowerblue Kingbird",
}


def test_status_go_seed_vector():
    assert name_from_seed(42) == "Hard Tame Brownbutterfly"


@pytest.mark.parametrize("key,name", sorted(STATUS_NAMES.items()))
def test_names_status_shows_for_known_keys(key, name):
    assert three_word_name(key) == name
    assert three_word_name(key[2:]) == name                     # hex without 0x, as status-go also accepts
    assert three_word_name(bytes.fromhex(key[2:])) == name       # raw bytes (a recovered signer)


@pytest.mark.parametrize("key,name", sorted(STATUS_NAMES.items()))
def test_compressed_form_gives_the_same_name(key, name):
    compressed = PublicKey(bytes.fromhex(key[2:])).format(compressed=True)
    assert three_word_name(compressed) == name
    assert three_word_name("0x" + compressed.hex()) == name


def test_zq3_form_of_a_key_gives_its_name():
    # status-go's own pair: this zQ3… key is the compressed form of the "Darkorange Blue Bubblefish" key
    raw = share_link.deserialize_public_key("zQ3shviWSAwB9X9Kz7aZHdUi6yU9S3BEpCsxM94XhFd2k2bWB")
    assert three_word_name(raw) == "Darkorange Blue Bubblefish"


def test_word_lists_are_status_go_lists():
    adj, ani = adjectives(), animals()
    assert (len(adj), len(ani)) == (1389, 1704)
    assert (adj[0], adj[-1], ani[0], ani[-1]) == ("Able", "Yellowgreen", "Aardvark", "Zorilla")
    assert all(w.isalpha() and w[0].isupper() for w in adj + ani)


def test_seed_is_the_low_64_bits_of_x():
    key = bytes.fromhex(next(iter(STATUS_NAMES))[2:])
    assert three_word_name(key) == name_from_seed(int.from_bytes(key[25:33], "big"))


@pytest.mark.parametrize("bad,message", [
    ("0x04zz", "public key is not hex"),
    (b"\x04" + b"\x01" * 64, "not a point on secp256k1"),
    (b"\x02" + b"\x00" * 10, "got 11 bytes starting 0x02"),
    (b"", "got 0 bytes"),
    (b"\x05" + b"\x01" * 64, "got 65 bytes starting 0x05"),
])
def test_not_a_key_is_refused_with_the_reason(bad, message):
    with pytest.raises(AliasError, match=message):
        three_word_name(bad)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=70) | st.text(max_size=140))
def test_any_input_gives_a_name_or_alias_error(data):
    try:
        name = three_word_name(data)
    except AliasError:
        return
    first, second, animal = name.split(" ")
    assert first in adjectives() and second in adjectives() and animal in animals()
