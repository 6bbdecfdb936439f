"""Hex text: one rule (core.hextext) for every reader of typed or stored hex. Before, eight readers each stripped
their own `0x` and handed the rest to bytes.fromhex, which also reads "ab cd" as two bytes; a pasted key or ID with a
blank in the middle was taken as another value's digits."""
from __future__ import annotations

import argparse

import pytest

from core.archive.cli import _hex_topic
from core.hextext import from_hex, strip_0x
from core.status.alias import AliasError, three_word_name
from core.status.archive_encryption import parse_cli_key
from core.status.errors import EncryptionError, KeyFileError
from core.status.identity import CommunityIdentity, community_id_bytes

SECRET = "0c" * 32
CID = CommunityIdentity.from_hex(SECRET).community_id     # a real point: the alias reader checks it
KEY = "ab" * 32


@pytest.mark.parametrize("text, out", [("", b""), ("0x", b""), ("0X", b""), ("00ff", b"\x00\xff"),
                                       ("0xABcd", b"\xab\xcd"), ("0XabCD", b"\xab\xcd")])
def test_accepted(text, out):
    assert from_hex(text) == out


@pytest.mark.parametrize("text", ["ab cd", "0xab cd", " abcd", "abcd ", "abc", "0xg0", "0x0x00", "x00",
                                  "ab\ncd", "٠١"])
def test_refused_without_echoing_the_text(text):
    with pytest.raises(ValueError) as e:
        from_hex(text)
    assert str(e.value) == "not hex (only the digits 0-9 and a-f, after an optional 0x)"


def test_strip_0x():
    assert [strip_0x(t) for t in ("0xab", "0XAB", "ab", "x0ab", "")] == ["ab", "AB", "ab", "x0ab", ""]


def test_every_reader_takes_either_prefix_and_refuses_a_blank_inside():
    """Each reader on the same three texts: 0x, 0X, and the digits with a blank after the first byte."""
    def spaced(digits):
        return digits[:2] + " " + digits[2:]

    readers = [
        ("--topic", lambda t: _hex_topic(t), "0badf00d", argparse.ArgumentTypeError),
        ("group key", lambda t: parse_cli_key(t, CID).key.hex(), KEY, EncryptionError),
        ("community ID", lambda t: community_id_bytes(t).hex(), CID[2:], ValueError),
        ("private key", lambda t: CommunityIdentity.from_hex(t).export_hex(), SECRET, KeyFileError),
        ("alias", lambda t: three_word_name(t), CID[2:], AliasError),
    ]
    for name, read, digits, error in readers:
        assert read("0x" + digits) == read("0X" + digits) == read(digits), name
        with pytest.raises(error):
            read(spaced(digits))


def test_nwaku_message_hashes_read_by_the_one_hex_rule():
    from core.waku.nwaku_rest import hash_from_json
    digest = bytes(range(32))
    assert hash_from_json("0x" + digest.hex()) == digest
    assert hash_from_json("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=") == digest     # older nwaku: base64
    with pytest.raises(ValueError, match="not hex"):
        hash_from_json("0x00 01")                                     # bytes.fromhex alone read this as 2 bytes
