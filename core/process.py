"""Child processes we started: stop them the same way everywhere."""
from __future__ import annotations

import subprocess


def stop_process(proc: subprocess.Popen, grace: float = 20.0) -> int:
    """SIGTERM, up to `grace` seconds to exit cleanly, then SIGKILL; returns the exit code. Nothing is sent to a
    process that has already exited."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()
