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


def _run(out: Path, cache: Path | None) -> tuple[dict, list[str]]:
    assert (Path(sysconfig.get_path("purelib")) / "archivist_coverage.pth").is_file(), "make setup installs the .pth"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_COVERAGE")}
    env.update(ARCHIVIST_COVERAGE_HOOK=str(HOOK), ARCHIVIST_COVERAGE_DIR=str(out), PYTHONPATH=str(ROOT))
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
