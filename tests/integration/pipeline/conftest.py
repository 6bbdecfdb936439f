import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.pipeline.cluster import StandaloneCluster
from core.pipeline.session import default_owner

from .cli_runner import daemon_env, group_pidfds, kill_pidfds

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(sys.prefix)


@pytest.fixture(scope="session")
def spark_owner():
    """The one SparkSession of the test process, on its owner thread (cold start paid once)."""
    owner = default_owner()
    owner.warm().result(timeout=600)
    yield owner
    owner.close()
    assert not owner.thread.is_alive()


# The worker's mount namespace: $0 the checkout, $1 the venv, $2 where the venv stays visible, $3 the driver's
# own folder; then the worker's command (spark-class and its arguments). The venv is bind-mounted elsewhere first
# (it is inside the checkout here), then the checkout and the driver's folder are covered by empty tmpfs mounts.
HIDE = r'''root="$0"; venv="$1"; alias="$2"; hidden="$3"; shift 3
mount --bind "$venv" "$alias" && mount -t tmpfs -o size=1m,mode=755 archivist-hidden "$root" &&
mount -t tmpfs -o size=1m,mode=700 archivist-hidden "$hidden" || exit 1
case "$SPARK_HOME" in "$venv"/*) export SPARK_HOME="$alias${SPARK_HOME#"$venv"}";; esac
cmd="$1"; shift
case "$cmd" in "$venv"/*) cmd="$alias${cmd#"$venv"}";; esac
exec "$cmd" "$@"'''


def mount_namespace_unavailable(tmp_path: Path) -> str | None:
    if os.geteuid() != 0:
        return "needs root to make a mount namespace (unshare -m) that hides folders from the worker"
    if shutil.which("unshare") is None:
        return "util-linux's `unshare` is not installed"
    if tmp_path.resolve().is_relative_to(ROOT):
        return "the test's temporary folder is inside the checkout the worker must not see"
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "seen").write_bytes(b"")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        'mount -t tmpfs -o size=1m archivist-probe "$0" && ls -A "$0"', str(probe)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stdout.strip():
        return f"cannot hide a folder in a mount namespace here: {(r.stderr or r.stdout).strip()}"
    return None


class HiddenWorker:
    """A master and a worker on 127.0.0.1 (2 cores, 1 GiB), the worker in a mount namespace where neither the project
    checkout nor `hidden` (the driver's own disk) can be seen; started on a thread at once, `wait()` for it.
    `python` is the worker's python3 (the venv, seen at another path)."""

    def __init__(self, base: Path):
        self.base = base
        self.hidden = base / "driver"          # the driver's disk: stores, outputs, member DBs
        self.hidden.mkdir()
        alias = base / "venv"
        alias.mkdir()
        # The venv's real folder: a checkout whose .venv is a symlink to a venv elsewhere has its python at a path
        # (ROOT/.venv/bin) that the hidden checkout covers, while the venv itself stays visible where it is.
        venv = VENV.resolve()
        self.python = alias / "bin" / "python3" if venv.is_relative_to(ROOT) else venv / "bin" / "python3"
        prefix = ("unshare", "-m", "--propagation", "private", "sh", "-c", HIDE, str(ROOT), str(venv), str(alias),
                  str(self.hidden))
        self.cluster = StandaloneCluster(base / "cluster", cores=2, memory="1g", python=str(self.python),
                                         worker_prefix=prefix, env=daemon_env())
        self.work = base / "cluster" / "work"
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._start, daemon=True)
        self.thread.start()

    def _start(self) -> None:
        try:
            self.cluster.start()
        except BaseException as e:   # re-raised by wait()
            self.error = e

    def wait(self) -> StandaloneCluster:
        self.thread.join(600)
        assert not self.thread.is_alive(), "the cluster did not start within 10 min"
        if self.error is not None:
            raise self.error
        return self.cluster

    def apps(self) -> set[Path]:
        """The worker's application folders (one per driver that ran executors there)."""
        return set(self.work.glob("app-*"))

    def stop(self) -> None:
        self.thread.join(600)
        daemons = [d for d in (self.cluster.worker, self.cluster.master) if d is not None]
        # the daemons' groups (executors, their Python workers), taken while the daemons are not yet reaped: after
        # cluster.stop() a killpg() could reach another test's new process group that got the same id
        left = [fd for d in daemons for fd in group_pidfds(d.proc.pid)]
        self.cluster.stop()
        kill_pidfds(left)   # executors the worker left behind
        assert all(d.proc.poll() is not None for d in daemons)


@pytest.fixture(scope="package")
def hidden_worker(tmp_path_factory):
    """One HiddenWorker for test_stage_cluster.py and test_hidden_checkout.py: two JVMs started once, stopped when
    this package's tests are done (not left idle for the rest of the session). Skipped, with the reason, where
    mount namespaces are unavailable."""
    base = tmp_path_factory.mktemp("hidden-worker")
    reason = mount_namespace_unavailable(base)
    if reason:
        print(f"\nSKIPPED (hidden worker): {reason}")
        pytest.skip(reason)
    w = HiddenWorker(base)
    try:
        yield w
    finally:
        w.stop()
