"""The import's first pass and its floor counted in instructions, which the load of a shared machine does not move
(issue 17): `python -m tests.bench.import_instructions N [--decode]` runs, each under valgrind (cachegrind, no cache
simulation; valgrind must be installed), this file's own `--run` with the same set-up and then nothing, the first
pass of `archivist import` (import_folder rows first, windows decoded in turn, until the history is visible), and
the floor (tests/bench/floor_import.py, indexes after) of the same rows, and prints each one's instructions less the
set-up's, and the ratio. `--decode`: also the windows read, checked and decoded alone (read_window_preview), as the
first pass does them. The folder is tests/bench/import_profile.py's (/tmp/archivist-import-N, made if missing); the
floor's rows come from a first pass run once beforehand (/tmp/archivist-import-N/first-pass.sqlite).
Instructions are not time (a cache miss costs more than an add), but they compare two versions of the code, or the
import and its floor, without the noise of other sessions' CPU use."""
from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class _Visible(Exception):
    """Raised from the authors' first progress report: every window is written."""


def _visible(done, total):
    raise _Visible


def _first_pass(folder: Path, db: Path, cid: str) -> None:
    from core.node import import_cli
    from core.torrent.selection import Selection
    try:
        import_cli.import_folder(folder, db, cid, Selection("all"), authors_progress=_visible, read_ahead=False)
    except _Visible:
        pass


def run(mode: str, n: int) -> None:
    """What valgrind runs: the set-up (modules, folder, rows), then `mode`'s work."""
    import core.history_import  # noqa: F401 - every module of the import loaded in the set-up
    import core.node.hydrate  # noqa: F401
    import core.status.archive_encryption as ae
    from core.node.import_cli import open_folder_index
    from core.history_import import plan_import, read_window_preview
    from core.status.traffic import TrafficGenerator
    from tests.bench.floor_import import floor
    from tests.bench.import_profile import build
    root = Path(f"/tmp/archivist-import-{n}")
    folder, cid = build(n, root), TrafficGenerator(seed=3, channels=3, authors=20).community_id
    ref = root / "first-pass.sqlite"
    rows = sqlite3.connect(ref).execute("SELECT * FROM history_messages ORDER BY rowid").fetchall()
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "import":
            _first_pass(folder, Path(tmp) / "h.sqlite", cid)
        elif mode == "floor":
            floor(Path(tmp) / "f.sqlite", ref, rows)
        elif mode == "decode":
            index = open_folder_index(folder)
            for w in plan_import(index, list(index)):
                read_window_preview(folder / "data", cid, index, w, lambda raw: ae.open_archive_bytes(raw, None))


def count(mode: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(["nice", "-n", "5", "valgrind", "--tool=cachegrind", "--cache-sim=no",
                              f"--cachegrind-out-file={tmp}/cg.out", sys.executable, "-m",
                              "tests.bench.import_instructions", "--run", mode, str(n)],
                             cwd=ROOT, capture_output=True, text=True, check=True).stderr
    return int(re.search(r"I\s+refs:\s+([\d,]+)", out).group(1).replace(",", ""))


def main(argv: list[str]) -> None:
    if argv[0] == "--run":
        run(argv[1], int(argv[2]))
        return
    n = int(argv[0])
    from core.status.traffic import TrafficGenerator
    from tests.bench.import_profile import build
    root = Path(f"/tmp/archivist-import-{n}")
    folder = build(n, root)
    if not (root / "first-pass.sqlite").exists():
        _first_pass(folder, root / "first-pass.sqlite", TrafficGenerator(seed=3, channels=3, authors=20).community_id)
    modes = ["setup", "import", "floor"] + (["decode"] if "--decode" in argv else [])
    got = {m: count(m, n) for m in modes}
    work = {m: got[m] - got["setup"] for m in modes[1:]}
    print(f"instructions, {n:,} messages (valgrind; load {os.getloadavg()[0]:.1f}, which does not move them): "
          + ", ".join(f"{m} {v / 1e9:.3f} G" for m, v in work.items())
          + f"; import / floor {work['import'] / work['floor']:.2f}x"
          + (f"; decode {work['decode'] / n:,.0f} a message" if "decode" in work else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
