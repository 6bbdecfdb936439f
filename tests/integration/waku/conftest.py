import contextlib
import threading

import pytest

from core.waku.embedded import EmbeddedWakuBackend
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore


@pytest.fixture
def make_node(tmp_path):
    """Start embedded nodes on 127.0.0.1 port 0; all are stopped (and stores closed) after the test."""
    started, stores = [], []

    def make(*, store=True, **kw):
        st = None
        if store:
            st = MessageStore(tmp_path / f"store{len(stores)}.db", **kw.pop("store_kw", {}))
            stores.append(st)
        b = EmbeddedWakuBackend(NodeConfig(store=st, **kw))
        b.start()
        started.append(b)
        return b

    yield make
    for b in reversed(started):
        with contextlib.suppress(Exception):
            b.stop()
    for s in stores:
        s.close()


class Collector:
    """Subscriber callback that lets a test wait (on a condition variable, not a sleep) for N messages."""

    def __init__(self):
        self.items = []
        self._cond = threading.Condition()

    def __call__(self, rm):
        with self._cond:
            self.items.append(rm)
            self._cond.notify_all()

    def wait_for(self, n: int, timeout: float = 15.0) -> list:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.items) >= n, timeout):
                raise AssertionError(f"got {len(self.items)} of {n} messages")
            return list(self.items)
