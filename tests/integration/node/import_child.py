"""A member import in a child process that SIGKILLs itself at a chosen point (for the kill -9 trials).

    python -m tests.integration.node.import_child FOLDER HISTORY MODE [FROM TO] [--kill-at N]

--kill-at N: the process kills itself with SIGKILL when the N-th history row is about to be written, i.e. inside a
window's transaction (N counts rows over all windows of this run). Without it the import runs to the end.
--kill-in-authors N: the same in the second pass, when the N-th author is about to be written (inside a batch's
transaction, every window already imported with its authors pending; batches of 64 authors).
"""
from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> int:
    kill_at = kill_in_authors = None
    if "--kill-at" in argv:
        i = argv.index("--kill-at")
        kill_at = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if "--kill-in-authors" in argv:
        i = argv.index("--kill-in-authors")
        kill_in_authors = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    folder, history_db, mode, *rng = argv
    from core.node.import_cli import import_folder
    from core.storage import history
    from core.torrent.selection import Selection

    if kill_at is not None:
        real = history.import_window
        seen = [0]

        def killing(con, cid, start, end, rows, archive_ids=(), pending=()):
            def rows_then_kill():
                for r in rows:
                    if seen[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    seen[0] += 1
                    yield r
            return real(con, cid, start, end, rows_then_kill(), archive_ids, pending)
        history.import_window = killing
    if kill_in_authors is not None:
        import core.history_import as HI
        HI.AUTHOR_BATCH = 64               # several batches from a test-sized import: some committed, one killed
        real_fill = history.fill_authors
        filled = [0]

        class KillingBatch(list):
            def __iter__(self):            # fill_authors reads the batch inside its transaction
                for o in list.__iter__(self):
                    if filled[0] == kill_in_authors:
                        os.kill(os.getpid(), signal.SIGKILL)
                    filled[0] += 1
                    yield o

        history.fill_authors = lambda con, cid, opened: real_fill(con, cid, KillingBatch(opened))
    sel = Selection("range", int(rng[0]), int(rng[1])) if mode == "range" else Selection(mode)
    from tests.support.chunked import COMMUNITY
    rep = import_folder(folder, history_db, COMMUNITY, sel)
    print(len(rep.imported_archive_ids), rep.messages, flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
