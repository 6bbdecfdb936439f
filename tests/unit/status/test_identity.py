import json
import os
import stat

import pytest
from hypothesis import given, settings, strategies as st
from coincurve import PrivateKey

from core.archive.codec import keccak256
from core.status.errors import KeyFileError, SignatureError
from core.status.identity import (CommunityIdentity, community_id_bytes, community_public_key, key_file_is_private,
                                  recover_digest, recover_keccak, sign_digest)


def test_keccak_known_vectors():
    # Keccak-256 (Ethereum), not SHA3-256: the empty-string and "abc" vectors
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"abc").hex() == "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"
    assert keccak256(b"testing").hex() == "5f16f4c7f149ac4f9510d9cf8cf384038ad348b3bcdc01915f95de12df9d1b02"


def test_signature_recovers_to_signer(community):
    digest = keccak256(b"payload")
    sig = sign_digest(community.private_key, digest)
    assert len(sig) == 65 and sig[64] in (0, 1)
    assert recover_digest(digest, sig) == community.public_key
    assert len(community.public_key) == 65 and community.public_key[0] == 4


def test_signature_of_other_key_or_other_data_is_rejected(community, other_key):
    sig = other_key.sign_recoverable(keccak256(b"payload"), hasher=None)
    assert recover_keccak(b"payload", sig) != community.public_key
    good = community.sign(b"payload")
    assert recover_keccak(b"payload!", good) != community.public_key


@pytest.mark.parametrize("sig", [b"", b"\x01" * 64, b"\x00" * 65, b"\x01" * 64 + b"\x1b", b"\xff" * 65])
def test_bad_signatures_raise_signature_error(sig):
    with pytest.raises(SignatureError):
        recover_keccak(b"x", sig)


def test_community_id_is_compressed_public_key(community):
    cid = community.community_id
    assert cid.startswith("0x") and len(cid) == 68 and cid[2:4] in ("02", "03")
    assert community_id_bytes(cid) == community.private_key.public_key.format(compressed=True)
    assert community_public_key(cid) == community.public_key
    with pytest.raises(ValueError):
        community_id_bytes("0x1234")


def test_import_export_hex(community):
    assert CommunityIdentity.from_hex(community.export_hex()).community_id == community.community_id
    assert CommunityIdentity.from_hex(community.export_hex()[2:]).community_id == community.community_id
    for bad in ("zz", "00" * 32, "ff" * 32, "01" * 31):
        with pytest.raises(KeyFileError):
            CommunityIdentity.from_hex(bad)


def test_plain_key_file_mode_0600(tmp_path, community):
    path = community.save(tmp_path / "keys" / "community.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and key_file_is_private(path)
    assert CommunityIdentity.load(path).community_id == community.community_id
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]   # no temp file left


def test_passphrase_key_file(tmp_path, community):
    path = community.save(tmp_path / "c.json", "correct horse", scrypt_n=2 ** 10)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert community.private_key.secret.hex() not in text
    assert CommunityIdentity.load(path, "correct horse").export_hex() == community.export_hex()
    with pytest.raises(KeyFileError, match="wrong passphrase"):
        CommunityIdentity.load(path, "wrong")
    with pytest.raises(KeyFileError, match="passphrase"):
        CommunityIdentity.load(path)
    doc = json.loads(text)
    doc["community_id"] = CommunityIdentity(PrivateKey(keccak256(b"x"))).community_id   # swap the bound ID
    with pytest.raises(KeyFileError):
        CommunityIdentity.from_file_json(doc, "correct horse")


@pytest.mark.parametrize("n,r,p,ok", [
    (2 ** 17, 8, 1, True),              # what we write
    (2 ** 18, 8, 1, True),              # geth's standard keystore: 256 MiB, 2^21
    (2 ** 18, 8, 2, True),              # 2^22 of work: the bound
    (2 ** 18, 8, 4, False),             # 2^23 of work
    (2 ** 19, 8, 1, False),             # 512 MiB
    (2 ** 22, 32, 16, False),           # 16 GiB and ~9 minutes: within the old bounds
])
def test_a_key_file_asks_scrypt_for_bounded_memory_and_work(tmp_path, community, monkeypatch, n, r, p, ok):
    """Refused before scrypt runs. scrypt is replaced by a recorder (running it at these sizes is the cost the
    bound avoids): an accepted file reaches it, then fails on its key (not derived with these parameters)."""
    from core.status import identity
    doc = json.loads(community.save(tmp_path / "c.json", "pw", scrypt_n=2 ** 10).read_text())
    doc["encryption"].update(n=n, r=r, p=p)
    asked = []
    monkeypatch.setattr(identity, "scrypt", lambda pw, salt, size, N, r, p: asked.append((N, r, p)) or bytes(32))
    with pytest.raises(KeyFileError) as e:
        CommunityIdentity.from_file_json(doc, "pw")
    assert (asked, str(e.value) == "key file scrypt parameters are out of range") == (
        ([(n, r, p)], False) if ok else ([], True))


@pytest.mark.parametrize("doc", [{}, [], {"type": "archivist-community-key", "version": 9},
                                 {"type": "archivist-community-key", "version": 1, "private_key": "nothex"},
                                 {"type": "archivist-community-key", "version": 1, "encryption": {"kdf": "scrypt"}}])
def test_malformed_key_files(doc):
    with pytest.raises(KeyFileError):
        CommunityIdentity.from_file_json(doc, "p")


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                     max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_json, st.fixed_dictionaries({"type": st.just("archivist-community-key"), "version": st.just(1)},
                                              optional={"private_key": st.text(max_size=70),
                                                        "community_id": st.text(max_size=70),
                                                        "encryption": _json})))
def test_fuzz_key_file_json(doc):
    try:
        CommunityIdentity.from_file_json(doc, "p")
    except KeyFileError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_key_file_bytes(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("k") / "key.json"
    path.write_bytes(blob)
    try:
        CommunityIdentity.load(path)
    except KeyFileError:
        pass
