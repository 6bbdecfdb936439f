import pytest

from core.codex.client import CodexClient
from tests.support.codex_node import NodeFactory


@pytest.fixture
def codex_nodes(tmp_path):
    factory = NodeFactory(tmp_path / "nodes")
    yield factory
    factory.close()


@pytest.fixture
def clients():
    made = []

    def make(url, **kw):
        c = CodexClient(url, **kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()
