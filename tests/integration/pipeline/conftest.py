import pytest

from core.pipeline.session import default_owner


@pytest.fixture(scope="session")
def spark_owner():
    """The one SparkSession of the test process, on its owner thread (cold start paid once)."""
    owner = default_owner()
    owner.warm().result(timeout=600)
    yield owner
    owner.close()
    assert not owner.thread.is_alive()
