import pytest

from tests.integration.torrent.support import Services, make_community


@pytest.fixture
def services(tmp_path):
    s = Services(tmp_path)
    yield s
    s.close()


@pytest.fixture(scope="module")
def community(tmp_path_factory):
    return make_community(tmp_path_factory.mktemp("community"))
