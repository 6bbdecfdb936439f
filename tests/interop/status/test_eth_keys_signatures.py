"""coincurve (libsecp256k1) signatures equal those of a second implementation: eth-keys' pure-Python backend."""
import pytest
from eth_keys import KeyAPI
from eth_keys.backends import NativeECCBackend
from hypothesis import given, settings, strategies as st

from core.archive.codec import keccak256
from core.status.identity import CommunityIdentity, recover_digest, sign_digest
from core.status import payload_v1

native = KeyAPI(NativeECCBackend)
pytestmark = pytest.mark.interop


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=32, max_size=32).filter(lambda b: 0 < int.from_bytes(b, "big") < 2 ** 256 - 2 ** 129),
       st.binary(max_size=200))
def test_signatures_equal_eth_keys(secret, data):
    ident = CommunityIdentity.from_secret(secret)
    digest = keccak256(data)
    ours = sign_digest(ident.private_key, digest)
    theirs = native.PrivateKey(secret).sign_msg_hash(digest)
    assert ours == theirs.to_bytes()                       # r || s || v, v in {0, 1}
    assert native.PublicKey.from_compressed_bytes(bytes.fromhex(ident.community_id[2:])).to_bytes() == \
        ident.public_key[1:]
    assert recover_digest(digest, theirs.to_bytes())[1:] == theirs.recover_public_key_from_msg_hash(digest).to_bytes()


def test_payload_v1_signature_verifies_with_eth_keys(community):
    pt = payload_v1.plaintext(b"hello", signer=community.private_key, padding=b"\x01" * 3)
    sig = native.Signature(pt[-65:])
    assert sig.recover_public_key_from_msg_hash(keccak256(pt[:-65])).to_bytes() == community.public_key[1:]
