import pytest
from coincurve import PrivateKey

from core.archive.codec import keccak256
from core.status.identity import CommunityIdentity


@pytest.fixture
def community() -> CommunityIdentity:
    return CommunityIdentity(PrivateKey(keccak256(b"test-community")))


@pytest.fixture
def other_key() -> PrivateKey:
    return PrivateKey(keccak256(b"someone-else"))
