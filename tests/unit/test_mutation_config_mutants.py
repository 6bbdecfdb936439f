"""The two lists of what mutation testing covers stay in step (docs/QUALITY.md): pyproject's [tool.mutmut] (what
`make mutation-union` mutates and runs) and scripts/mutation_module.py's MODULES (`make mutation`: each module with
its own tests). A module or test file added to one and not the other would silently drop out of one of the runs."""
from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, list[str]]:
    spec = importlib.util.spec_from_file_location("mutation_module", ROOT / "scripts" / "mutation_module.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.MODULES


def _mutmut() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]


def test_both_runs_mutate_the_same_modules():
    assert sorted(_modules()) == sorted(_mutmut()["only_mutate"])


def test_every_module_test_is_in_the_full_runs_selection_and_every_selected_test_serves_a_module():
    selection = _mutmut()["pytest_add_cli_args_test_selection"]
    used = {t for tests in _modules().values() for t in tests}

    def selected(t: str) -> bool:
        return t in selection or any((ROOT / s).is_dir() and t.startswith(s.rstrip("/") + "/") for s in selection)
    assert sorted(t for t in used if not selected(t)) == []
    unused = [s for s in selection if not (ROOT / s).is_dir() and s not in used]
    assert unused == []
    for t in used:
        assert (ROOT / t).is_file(), t
