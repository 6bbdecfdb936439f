"""A member import in a child process that SIGKILLs itself at a chosen point (for the kill -9 trials).

    python -m tests.integration.node.import_child FOLDER HISTORY MODE [FROM TO] [--kill-at N]

--kill-at N: the process kills itself with SIGKILL when the N-th history row is about to be written, i.e. inside a
window's transaction (N counts rows over all windows of this run). Without it the import runs to the end.
"""
from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> int:
    kill_at = None
    if "--kill-at" in argv:
        i = argv.index("--kill-at")
        kill_at = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    folder, history_db, mode, *rng = argv
    from core.node.import_cli import import_folder
    from core.storage import history
    from core.torrent.selection import Selection

    if kill_at is not None:
        real = history.import_window
        seen = [0]

        def killing(con, cid, start, end, rows, archive_ids=()):
            def rows_then_kill():
                for r in rows:
                    if seen[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    seen[0] += 1
                    yield r
            return real(con, cid, start, end, rows_then_kill(), archive_ids)
        history.import_window = killing
    sel = Selection("range", int(rng[0]), int(rng[1])) if mode == "range" else Selection(mode)
    from tests.support.chunked import COMMUNITY
    rep = import_folder(folder, history_db, COMMUNITY, sel)
    print(len(rep.imported_archive_ids), rep.messages, flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
