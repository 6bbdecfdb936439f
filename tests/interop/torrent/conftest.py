import shutil
import socket
import subprocess
import time

import pytest

from tests.integration.torrent.support import Services, make_community

pytestmark = pytest.mark.interop


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 15) -> None:
    """Poll until the client accepts connections (it has no other readiness signal)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the client exited early"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


class Aria2:
    """aria2c processes, all killed at teardown."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []

    def __call__(self, *args, port: int) -> subprocess.Popen:
        cmd = ["aria2c", f"--listen-port={port}", "--enable-dht=false", "--enable-dht6=false",
               "--bt-enable-lpd=false", "--enable-peer-exchange=false", "--summary-interval=0",
               "--console-log-level=warn", "--disable-ipv6=true", "--file-allocation=none", *args]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=10)


@pytest.fixture
def aria2():
    if not shutil.which("aria2c"):
        pytest.skip("aria2c is not installed (scripts/system-packages.txt: aria2)")
    a = Aria2()
    yield a
    a.close()


@pytest.fixture
def services(tmp_path):
    s = Services(tmp_path)
    yield s
    s.close()


@pytest.fixture(scope="module")
def community(tmp_path_factory):
    return make_community(tmp_path_factory.mktemp("community"))
