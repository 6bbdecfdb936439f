import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from core.waku.embedded import EmbeddedWakuBackend
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore

JS_DIR = Path(__file__).resolve().parents[1] / "js"
HAVE_JS = shutil.which("node") is not None and (JS_DIR / "node_modules" / "@waku" / "sdk").is_dir()
needs_js = pytest.mark.skipif(not HAVE_JS, reason="js-waku not installed: run `make js-deps`")


class JsNode:
    """A js-waku script in a child process; its JSON-lines stdout is read on a thread into a queue."""

    def __init__(self, script: str, **args):
        argv = ["node", script, *(f"--{k}={v}" for k, v in args.items())]
        self.proc = subprocess.Popen(argv, cwd=JS_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, NODE_ENV="test"))
        self.events: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.put(json.loads(line))
        self.events.put({"event": "exit"})

    def next(self, kind: str, timeout: float = 30.0) -> dict:
        """The next event of `kind`; fails (with the script's stderr) on timeout or exit."""
        while True:
            try:
                ev = self.events.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no {kind!r} event from js-waku; stderr:\n{''.join(self.stderr)[-3000:]}")
            if ev["event"] == kind:
                return ev
            if ev["event"] == "exit":
                raise AssertionError(f"js-waku exited before {kind!r}; stderr:\n{''.join(self.stderr)[-3000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def js_node():
    started = []

    def start(script, **args):
        n = JsNode(script, **args)
        started.append(n)
        return n
    yield start
    for n in started:
        n.stop()


@pytest.fixture
def our_node():
    nodes, stores = [], []

    def make(store=True, **kw):
        st = MessageStore() if store else None
        if st:
            stores.append(st)
        b = EmbeddedWakuBackend(NodeConfig(store=st, **kw))
        b.start()
        nodes.append(b)
        return b
    yield make
    for b in nodes:
        b.stop()
    for s in stores:
        s.close()
