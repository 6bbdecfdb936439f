import gc
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_main_thread():
    """Collect each test's cyclic garbage here, on the main thread. Otherwise a cycle holding a finished test's Qt
    objects can be freed later by a collection that a worker thread triggers (a decode in the inspector's pool),
    and Qt objects destroyed off the GUI thread crash the process (seen once as a segfault in CI)."""
    yield
    gc.collect()
