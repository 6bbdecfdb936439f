"""Children for the kill -9 trials, forked from multiprocessing's fork server rather than started as new
interpreters. The server imports the node's modules once; each child then starts in milliseconds instead of paying
Python's start-up and those imports again (and, under `make test`, slipcover instrumenting them again), about
50 times per test. A child is still a process of its own (never a fork of the threaded test process), killed with
SIGKILL or killing itself, exactly as before."""
from __future__ import annotations

import multiprocessing

# what the children import; the server loads them once (if this process's fork server is not running yet: the
# member's RowPool may have started it with its own list, and then a child imports what it needs itself)
PRELOAD = ["core.node.control", "core.node.import_cli", "core.archive.folder", "core.archive.verify",
           "core.storage.archive_state", "core.storage.history", "core.torrent.selection",
           "tests.integration.node.import_child"]


def start(target, *args) -> multiprocessing.Process:
    """Run `target(*args)` (a module-level function) in a new child of the fork server; returns it started."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    p = ctx.Process(target=target, args=args, daemon=False)
    p.start()
    return p


def import_child_main(argv: list[str]) -> None:
    """tests/integration/node/import_child.py's command, as a forked child (its exit code is main's)."""
    import sys

    from tests.integration.node import import_child
    sys.exit(import_child.main(argv))
