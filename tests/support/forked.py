"""Children for the kill -9 trials, forked from a fork server rather than started as new interpreters. The server
imports the node's modules once; each child then starts in milliseconds instead of paying Python's start-up and
those imports again (and, under `make test`, the coverage hook instrumenting them again), about 50 times per test.
A child is still a process of its own (never a fork of the threaded test process), killed with SIGKILL or killing
itself, exactly as before.

The server is this module's own (SERVER), not multiprocessing's process-wide one: that one is started by whichever
caller comes first (the member's RowPool starts it with only core.history_import preloaded), and then every child
imported the node's modules itself (numpy among them: ~0.1 CPU-s a child, more under the coverage hook)."""
from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import tempfile
from multiprocessing import forkserver, popen_forkserver, spawn, util
from multiprocessing.context import reduction, set_spawning_popen

# everything the children import (the imports inside functions too): the server loads them once
PRELOAD = ["core.cli", "core.node.control", "core.node.clock", "core.node.import_cli", "core.node.hydrate",
           "core.archive.folder", "core.archive.verify", "core.archive.columnar", "core.status.archive_encryption",
           "core.pb.status_chat_message_pb2", "core.pb.archivist_status_view_pb2", "core.storage.archive_state",
           "core.storage.history", "core.storage.member_history", "core.torrent.selection",
           "tests.integration.node.import_child", "core.archive.build", "tests.integration.archive.crash_builder"]

SERVER = forkserver.ForkServer()
SERVER.set_forkserver_preload(PRELOAD)


class _Popen(popen_forkserver.Popen):
    def _launch(self, process_obj):
        """popen_forkserver.Popen._launch (Python 3.11), with SERVER instead of the process-wide server."""
        prep_data = spawn.get_preparation_data(process_obj._name)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = SERVER.connect_to_new_process(self._fds)
        parent_w = os.dup(w)      # the data pipe's write end: the child's sentinel of its parent
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(multiprocessing.get_context("forkserver").Process):
    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)


# _Popen._launch is Python 3.11's: on another Python the process-wide fork server is used (the children are the
# same; only the preloaded modules may be another caller's list)
OWN_SERVER = sys.version_info[:2] == (3, 11)


def start(target, *args) -> multiprocessing.Process:
    """Run `target(*args)` (a module-level function) in a new child of SERVER; returns it started."""
    if OWN_SERVER:
        p = _Process(target=target, args=args, daemon=False)
    else:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        p = ctx.Process(target=target, args=args, daemon=False)
    p.start()
    return p


def stop() -> None:
    """Stop SERVER (after the last child has ended); the next start() starts it again."""
    SERVER._stop()


def run_cli(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """`archivist ARGV` (core.cli.main) in a child of SERVER: its exit code, stdout and stderr as subprocess.run
    gives them for `python -m core.cli ARGV` (an uncaught exception prints its traceback on stderr, exit code 1),
    without a new interpreter importing the command's modules each time."""
    with tempfile.TemporaryDirectory(prefix="archivist-cli-") as tmp:
        out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        p = start(_cli_main, [str(a) for a in argv], out, err)
        p.join(timeout)
        if p.exitcode is None:
            p.kill()
            p.join()
            raise subprocess.TimeoutExpired(["archivist", *map(str, argv)], timeout)
        with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
            return subprocess.CompletedProcess(["archivist", *map(str, argv)], p.exitcode, o.read(), e.read())


def _cli_main(argv: list[str], out: str, err: str) -> None:
    from core.cli import main
    for fd, path in ((1, out), (2, err)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.exit(main(argv))


def import_child_main(argv: list[str]) -> None:
    """tests/integration/node/import_child.py's command, as a forked child (its exit code is main's)."""
    from tests.integration.node import import_child
    sys.exit(import_child.main(argv))
