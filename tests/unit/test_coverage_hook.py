"""scripts/coverage_hook.py (make test's branch coverage in every process): a process that loads a module's
instrumented code from the cache reports exactly what one that instrumented it reports, and slipcover removes its
probes from that code as it does from its own."""
from __future__ import annotations

import hashlib
import json
import marshal
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "scripts" / "coverage_hook.py"
MAGNET = str(ROOT / "core" / "torrent" / "magnet.py")
# A function with branches, taken both ways: a magnet link that parses and one that does not. The first call's
# bytecode still has its probes; by the 400th slipcover has removed those that fired (it does when a probe that
# already fired is hit again 50 times), so the code has changed, the same way with and without the cache.
CHILD = """
import hashlib
from core.torrent.magnet import MagnetError, parse_magnet
codes = []
for i in range(400):
    parse_magnet("magnet:?xt=urn:btih:" + "ab" * 20 + "&dn=x")
    try:
        parse_magnet("magnet:?xt=urn:btih:zz")
    except MagnetError:
        pass
    if i in (0, 399):
        codes.append(hashlib.sha256(parse_magnet.__code__.co_code).hexdigest())
print(*codes)
"""


def _hooked_env(out: Path) -> dict[str, str]:
    """This environment with the hook on, writing to `out` (the run's own hook variables, if any, left out)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_COVERAGE")}
    env.update(ARCHIVIST_COVERAGE_HOOK=str(HOOK), ARCHIVIST_COVERAGE_DIR=str(out), PYTHONPATH=str(ROOT))
    return env


def _run(out: Path, cache: Path | None) -> tuple[dict, list[str]]:
    assert (Path(sysconfig.get_path("purelib")) / "archivist_coverage.pth").is_file(), "make setup installs the .pth"
    out.mkdir()
    env = _hooked_env(out)
    if cache is not None:
        env["ARCHIVIST_COVERAGE_CACHE"] = str(cache)
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    [report] = list(out.glob("*.json"))
    return json.loads(report.read_text())["files"]["core/torrent/magnet.py"], r.stdout.split()   # relative to cwd


def _entries(cache: Path) -> dict[Path, tuple]:
    return {e: marshal.loads(e.read_bytes()[32:]) for e in cache.iterdir()}


def test_cached_instrumentation_reports_the_same_coverage_and_sheds_the_same_probes(tmp_path):
    computed, codes = _run(tmp_path / "none", None)
    assert computed["missing_lines"] and computed["executed_branches"] and computed["missing_branches"]
    assert len(codes) == 2 and codes[0] != codes[1]            # slipcover removed the fired probes
    cache = tmp_path / "cache"
    assert _run(tmp_path / "cold", cache) == (computed, codes)  # fills the cache
    entries = _entries(cache)
    assert len(entries) >= 3 and not [e for e in entries if e.name.endswith(".part")]
    assert _run(tmp_path / "warm", cache) == (computed, codes)  # reads it

    # the warm run did read the cache: an entry for magnet.py that claims no lines and no branches changes what is
    # reported
    for e, (tpl, indexes, lines, branches) in entries.items():
        if tpl.co_filename == MAGNET:
            data = marshal.dumps((tpl, indexes, (), ()))
            e.write_bytes(hashlib.sha256(data).digest() + data)
    doctored, _ = _run(tmp_path / "doctored", cache)
    assert doctored["executed_lines"] == doctored["missing_lines"] == []
    assert doctored["missing_branches"] == [] and doctored["executed_branches"] == computed["executed_branches"]

    # ... and an entry whose bytes do not match its digest is ignored and made again
    for e in cache.iterdir():
        blob = e.read_bytes()
        e.write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    assert _run(tmp_path / "damaged", cache) == (computed, codes)
    assert _entries(cache).keys() == entries.keys()

    # ... and so is one whose digest checks out but which is not an entry of this format
    for e in cache.iterdir():
        data = marshal.dumps((1, [2], "three"))
        e.write_bytes(hashlib.sha256(data).digest() + data)
    assert _run(tmp_path / "foreign", cache) == (computed, codes)
    assert all(isinstance(entry[0], type(_run.__code__)) for entry in _entries(cache).values())


def _hook_namespace() -> dict:
    """The hook's functions, without starting it (ARCHIVIST_COVERAGE_DIR unset in the namespace's run)."""
    saved = os.environ.pop("ARCHIVIST_COVERAGE_DIR", None)
    try:
        ns = {"__name__": "coverage_hook_under_test"}
        exec(compile(HOOK.read_text(), str(HOOK), "exec"), ns)
        return ns
    finally:
        if saved is not None:
            os.environ["ARCHIVIST_COVERAGE_DIR"] = saved


def _same_code(a, b, where: str) -> None:
    import types
    assert (a.co_code, a.co_linetable, a.co_exceptiontable, a.co_stacksize, a.co_names, a.co_varnames) == \
        (b.co_code, b.co_linetable, b.co_exceptiontable, b.co_stacksize, b.co_names, b.co_varnames), where
    assert len(a.co_consts) == len(b.co_consts), where
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType):
            _same_code(x, y, f"{where}/{x.co_name}")
        elif type(x).__name__ == "PyCapsule":          # a probe: each process makes its own
            assert type(y).__name__ == "PyCapsule", where
        else:
            assert x == y or (x != x and y != y), (where, x, y)


def test_code_rebuilt_from_the_cache_is_slipcovers_own_instrumented_code(tmp_path, monkeypatch):
    """Byte for byte (bytecode, line and exception tables, constants with probes in the same places), with the same
    lines, branches and probe offsets recorded, for the largest modules of core/."""
    import ast
    import builtins
    import types
    from importlib import machinery

    from slipcover import Slipcover, branch, importer
    ns = _hook_namespace()
    monkeypatch.setattr(importer.SlipcoverLoader, "exec_module", importer.SlipcoverLoader.exec_module)
    ns["_cache_instrumented"](str(tmp_path / "cache"))
    for name in ("core/node/control.py", "core/archive/codec.py", "core/history_import.py"):
        origin = (ROOT / name).resolve()
        own = Slipcover(branch=True)
        code = own.instrument(compile(branch.preinstrument(ast.parse(origin.read_bytes())), str(origin), "exec"))
        for run in ("made", "loaded"):
            sci = Slipcover(branch=True)
            loader = importer.SlipcoverLoader(sci, machinery.SourceFileLoader("m", str(origin)), origin)
            ran = []
            with monkeypatch.context() as m:
                m.setattr(builtins, "exec", lambda c, *_: ran.append(c))
                loader.exec_module(types.ModuleType("m"))
            _same_code(code, ran[0], f"{name} ({run})")
            f = str(origin)
            assert (sci.code_lines[f], sci.code_branches[f]) == (own.code_lines[f], own.code_branches[f])
            assert sorted(map(repr, sci.code2index.values())) == sorted(map(repr, own.code2index.values()))
            assert len(sci.instrumented[f]) == 1


def test_slipcover_does_not_walk_other_threads_frames(tmp_path):
    """_no_frame_walk: slipcover's module sees no thread's frames; the rest of the process still does."""
    env = _hooked_env(tmp_path)
    child = ("import sys, slipcover.slipcover as s; "
             "print(s.sys._current_frames(), len(sys._current_frames()), s.sys.version_info == sys.version_info)")
    r = subprocess.run([sys.executable, "-c", child], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, "{} 1 True\n", "")
