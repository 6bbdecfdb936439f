"""The layering holds: every import in core/ and gui/ (module level and inside functions) points down or sideways.

Layers, top to bottom: gui -> node -> pipeline/codex -> torrent/status -> archive/waku -> storage/pb (issue 20).
A unit (a package such as core.archive, or a top-level module such as core.synth) may import units of its own
layer and of the layers below. Top-level modules sit where their imports put them: just above the highest unit
they import, and no higher than their lowest importer. Units of one layer must not import each other in a circle,
and no two modules may import each other (core/pipeline/build.py <-> session.py was one).
An upward import that cannot go yet is listed in EXCEPTIONS with the reason; an exception that no longer occurs
fails the test too, so the list only shrinks.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAYERS: list[tuple[str, ...]] = [   # top first
    ("gui", "core.appcli"),         # core.appcli: the `gui`/`demo` commands, a thin launcher of gui.app
    ("core.node",),
    ("core.pipeline", "core.codex"),
    # history_import: the importer's rules (whole windows, rows from archives, unwrapped by core.status.unwrap),
    # used by core.torrent.selection, core.pipeline and core.node
    ("core.torrent", "core.status", "core.history_import"),
    # just above core.archive: synth (waku_messages test data from core.archive's codec); synth_cli is the
    # `synth` command over it
    ("core.synth", "core.synth_cli"),
    ("core.archive", "core.waku"),
    # core.process: stopping child processes; core.hextext: hex text with an optional 0x; core.httpclient: the
    # REST clients' one TLS context
    ("core.storage", "core.pb", "core.varint", "core.process", "core.hextext", "core.httpclient"),
    # core: the package (__version__). core.cli: `archivist` itself. By its imports it is the bottom: it imports
    # only `core` and loads the command modules by name (COMMAND_MODULES, importlib) at run time, a registry the
    # commands plug into; the commands import its print_json.
    ("core", "core.cli"),
]

# the four tests that read the checkout share its parse (every_import), so they run on one xdist worker
ON_ONE_WORKER = pytest.mark.xdist_group("layering")

# (importer, imported module) -> why it stays for now. Each entry points up a layer.
EXCEPTIONS: dict[tuple[str, str], str] = {
}


def _layer_of() -> dict[str, int]:
    """Unit -> level, counted from the bottom (1)."""
    return {unit: len(LAYERS) - i for i, units in enumerate(LAYERS) for unit in units}


def unit_of(module: str, layers: dict[str, int]) -> str | None:
    """The longest unit name that is `module` or a package prefix of it (`core` is only the package itself, so a
    new top-level module has no unit until it is placed)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in layers and (name != "core" or module == "core"):
            return name
    return None


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(module: str, root: Path) -> bool:
    p = root.joinpath(*module.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


@functools.lru_cache(maxsize=None)
def every_import(path: Path, root: Path) -> tuple[tuple[str, int], ...]:
    """(imported module, line) for every import statement in the file, wherever it is (functions included). Each
    file is parsed once per process: four tests read the checkout's ~300 files."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:     # `from core import synth` imports the module core.synth
                sub = f"{target}.{a.name}"
                found.append((sub if _exists(sub, root) else target, node.lineno))
    return tuple(found)


def imports_of(path: Path, root: Path) -> list[tuple[str, int]]:
    """(imported module of core or gui, line) for every such import in the file."""
    return sorted({(t, line) for t, line in every_import(path, root) if t.split(".")[0] in ("core", "gui")},
                  key=lambda x: (x[1], x[0]))


def scan(root: Path) -> dict[str, list[tuple[str, int]]]:
    files = sorted(root.glob("core/**/*.py")) + sorted(root.glob("gui/**/*.py"))
    return {_module_name(f, root): imports_of(f, root) for f in files}


def upward_imports(graph: dict[str, list[tuple[str, int]]]) -> list[tuple[str, str, int, str]]:
    """(importer, imported, line, why) for each import that points up a layer or whose unit has no layer."""
    layers = _layer_of()
    bad = []
    for src, targets in graph.items():
        su = unit_of(src, layers)
        if su is None:
            bad.append((src, "", 0, f"{src} is in no layer: add its unit to LAYERS"))
            continue
        for dst, line in targets:
            du = unit_of(dst, layers)
            if du is None:
                bad.append((src, dst, line, f"{dst} is in no layer: add its unit to LAYERS"))
            elif layers[du] > layers[su]:
                bad.append((src, dst, line, f"{su} (level {layers[su]}) imports {du} (level {layers[du]}, higher)"))
    return bad


def circles(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    """Modules importing each other, and circles among the units of one layer."""
    found = []
    edges = {src: {d for d, _ in ts} for src, ts in graph.items()}
    for a, targets in edges.items():
        for b in targets:
            if a < b and a in edges.get(b, ()):
                found.append(f"{a} <-> {b}")
    layers = _layer_of()
    units: dict[str, set[str]] = {}
    for src, targets in edges.items():
        su = unit_of(src, layers)
        for dst in targets:
            du = unit_of(dst, layers)
            if su and du and su != du and layers[su] == layers[du]:
                units.setdefault(su, set()).add(du)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in units.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False
    found += sorted(f"unit circle through {u}" for u in units if reaches(u, u, {u}))
    return found


@ON_ONE_WORKER
def test_no_upward_import():
    bad = [b for b in upward_imports(scan(ROOT)) if (b[0], b[1]) not in EXCEPTIONS]
    assert bad == [], "upward imports:\n" + "\n".join(f"  {s}:{line} imports {d}: {why}" for s, d, line, why in bad)


@ON_ONE_WORKER
def test_every_exception_still_occurs():
    """A fixed exception must leave the list (so it cannot silently cover a new upward import)."""
    present = {(s, d) for s, d, _, _ in upward_imports(scan(ROOT))}
    assert sorted(set(EXCEPTIONS) - present) == []


@ON_ONE_WORKER
def test_no_import_circles():
    assert circles(scan(ROOT)) == []


def qt_imports(root: Path) -> list[str]:
    return [f"{path.relative_to(root)}:{line} {name}" for path in sorted(root.glob("core/**/*.py"))
            for name, line in every_import(path, root) if name.split(".")[0] in ("PySide6", "shiboken6", "PyQt5",
                                                                                   "PyQt6")]


@ON_ONE_WORKER
def test_core_never_imports_qt():
    assert qt_imports(ROOT) == []


# -- the checker itself, on a small tree of our own -----------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


BASE = {"core/__init__.py": "", "core/archive/__init__.py": "", "core/status/__init__.py": "",
        "core/status/keys.py": "", "core/archive/codec.py": "from core.storage import history\n",
        "core/storage/__init__.py": "", "core/storage/history.py": ""}


def test_checker_sees_an_upward_import_inside_a_function(tmp_path):
    root = _tree(tmp_path, BASE | {"core/archive/cli.py": "def f():\n    from core.status import keys\n"})
    assert upward_imports(scan(root)) == [
        ("core.archive.cli", "core.status.keys", 2, "core.archive (level 3) imports core.status (level 5, higher)")]


@pytest.mark.parametrize("line", ["import core.status.keys", "from ..status import keys", "from core import status"])
def test_checker_sees_every_import_form(tmp_path, line):
    root = _tree(tmp_path, BASE | {"core/archive/cli.py": line + "\n"})
    assert [(s, d.rsplit(".", 1)[0] if d.endswith("keys") else d) for s, d, _, _ in upward_imports(scan(root))] \
        == [("core.archive.cli", "core.status")]


def test_checker_allows_down_and_sideways_and_names_unplaced_modules(tmp_path):
    root = _tree(tmp_path, BASE | {"core/status/cli.py": "from core.archive import codec\nimport core.status.keys\n",
                                   "core/newthing.py": "import core.storage.history\n"})
    assert upward_imports(scan(root)) == [("core.newthing", "", 0, "core.newthing is in no layer: add its unit to "
                                                                    "LAYERS")]


def test_checker_finds_a_circle(tmp_path):
    root = _tree(tmp_path, BASE | {"core/pipeline/__init__.py": "",
                                   "core/pipeline/build.py": "from core.pipeline.session import SparkOwner\n",
                                   "core/pipeline/session.py": "def warm():\n    from . import build\n"})
    assert circles(scan(root)) == ["core.pipeline.build <-> core.pipeline.session"]


def test_checker_sees_qt_in_core(tmp_path):
    root = _tree(tmp_path, BASE | {"core/archive/view.py": "def f():\n    from PySide6 import QtCore\n",
                                   "core/status/x.py": "import shiboken6.Shiboken\n", "gui/w.py": "import PySide6\n"})
    assert qt_imports(root) == ["core/archive/view.py:2 PySide6", "core/status/x.py:1 shiboken6.Shiboken"]
