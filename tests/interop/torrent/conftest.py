import os
import select
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
    """Wait for aria2c's own notice that it has bound `port` ("IPv4 BitTorrent: listening on TCP port N"),
    reading its output as it comes (select on the pipe; the lines read stay out of the later communicate())."""
    want = f"listening on TCP port {port}".encode()
    fd, seen = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while want not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"aria2c did not say it listens on {port}: {seen.decode()[-1000:]}")
        chunk = os.read(fd, 4096)
        assert chunk, f"the client exited early: {seen.decode()[-1000:]}"
        seen += chunk


class Aria2:
    """aria2c processes, all killed at teardown."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []

    def __call__(self, *args, port: int) -> subprocess.Popen:
        cmd = ["aria2c", f"--listen-port={port}", "--enable-dht=false", "--enable-dht6=false",
               "--bt-enable-lpd=false", "--enable-peer-exchange=false", "--summary-interval=0",
               "--console-log-level=notice", "--disable-ipv6=true", "--file-allocation=none", *args]
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
