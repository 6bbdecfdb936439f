"""Each xdist worker collects every test module, and pytest rewrites the asserts of each module it imports: about
8 CPU-s a worker for the ~260 files, most of a worker's collection, done once per worker. Here worker i of N first
rewrites every N-th file itself and writes pytest's own cached bytecode for it (`__pycache__/NAME.cpython-311-
pytest-X.pyc`, which pytest reads on import whenever it matches the source's mtime and size, also with
PYTHONDONTWRITEBYTECODE set). By the time its collection reaches the other workers' files they are there, so each
file is rewritten about once a run instead of N times; a file whose bytecode is not there yet is rewritten on import
as before. This uses pytest's private rewrite functions (pytest is pinned in pyproject.toml): if they are missing,
nothing is shared and collection works as without it."""
from __future__ import annotations

import types
from pathlib import Path


def rewritten_files(root: Path) -> list[Path]:
    """The modules pytest rewrites on import under `root`: test_*.py and conftest.py (not Node packages)."""
    return sorted(p for pattern in ("test_*.py", "conftest.py") for p in root.rglob(pattern)
                  if "node_modules" not in p.parts and "__pycache__" not in p.parts)


def rewrite_share(config, files: list[Path], index: int, count: int) -> int:
    """Write pytest's rewritten bytecode of files[index::count] that has none yet; returns how many were written."""
    try:
        from _pytest.assertion import rewrite as rw
        helpers = (rw._rewrite_test, rw._write_pyc, rw._read_pyc, rw.get_cache_dir, rw.try_makedirs, rw.PYC_TAIL)
    except (ImportError, AttributeError):
        return 0
    rewrite_test, write_pyc, read_pyc, cache_dir_of, makedirs, tail = helpers
    quiet = types.SimpleNamespace(trace=lambda *_: None)
    written = 0
    for fn in files[index::count]:
        cache_dir = cache_dir_of(fn)
        pyc = cache_dir / (fn.name[:-3] + tail)
        if read_pyc(fn, pyc) is not None or not makedirs(cache_dir):
            continue
        stat, co = rewrite_test(fn, config)
        written += bool(write_pyc(quiet, co, stat, pyc))
    return written


def share_for_worker(config) -> int:
    """In an xdist worker with assert rewriting on: its share of the run's test files (see the module's docstring)."""
    worker = getattr(config, "workerinput", None)
    if not worker or config.getoption("assertmode") != "rewrite":
        return 0
    count = int(worker.get("workercount", 1))
    if count < 2:
        return 0
    index = int(str(worker["workerid"]).removeprefix("gw"))
    return rewrite_share(config, rewritten_files(Path(config.rootpath) / "tests"), index, count)
