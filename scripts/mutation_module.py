"""Mutation testing of ONE module with a narrowed test selection, outside the checkout (docs/QUALITY.md).

    .venv/bin/python scripts/mutation_module.py core/archive/codec.py tests/unit/archive/test_codec.py ...
    .venv/bin/python scripts/mutation_score.py --dir /tmp/archivist-mutation/codec/mutants

copies core/ and tests/ into WORK/NAME (NAME: the module's file name; WORK: --work, /tmp/archivist-mutation by
default), writes there a pyproject.toml whose [tool.mutmut] mutates only that module and runs only the given test
files, and runs mutmut there (niced, one child). Why: `make mutation` runs every module with the union of all
their tests; mutmut then runs, for each mutant, every listed test that calls the mutated function, and the
functions nearly every test calls (keccak256, ArchiveFolder.append, the control node's build) cost a minute per
mutant on a loaded machine. The module's own test files kill as many and run in a fraction of that. The checkout is
not touched (other work can go on in it), and --head takes core/ as committed instead of the working tree.
Survivors: `cd WORK/NAME && mutmut results`, `mutmut show NAME`."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mutmut_section(module: str, tests: list[str]) -> str:
    listed = ", ".join(f'"{t}"' for t in tests)
    return (f'[tool.mutmut]\nsource_paths = ["core"]\nonly_mutate = ["{module}"]\n'
            f'pytest_add_cli_args_test_selection = [{listed}]\n')


def narrowed_pyproject(text: str, module: str, tests: list[str]) -> str:
    """The project's pyproject.toml with its [tool.mutmut] lists replaced (its other keys, pytest's options, kept)."""
    start = text.index("[tool.mutmut]\n")
    end = text.index("\npytest_add_cli_args = ", start) + 1
    return text[:start] + mutmut_section(module, tests) + text[end:]


def prepare(module: str, tests: list[str], work: Path, head: bool) -> Path:
    for path in [module, *tests]:
        if not (ROOT / path).exists():
            raise SystemExit(f"{path} does not exist (paths are relative to {ROOT})")
    d = work / Path(module).stem
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    if head:
        subprocess.run(f"git -C '{ROOT}' archive HEAD core | tar -x -C '{d}'", shell=True, check=True)
    else:
        shutil.copytree(ROOT / "core", d / "core", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", d / "tests", ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    (d / "pyproject.toml").write_text(narrowed_pyproject((ROOT / "pyproject.toml").read_text(), module, tests))
    return d


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", help="the module to mutate, e.g. core/node/member.py")
    p.add_argument("tests", nargs="+", help="the test files (or folders) that run for its mutants")
    p.add_argument("--work", type=Path, default=Path("/tmp/archivist-mutation"))
    p.add_argument("--head", action="store_true", help="mutate core/ as committed (HEAD), not the working tree")
    p.add_argument("--prepare-only", action="store_true", help="make the folder, do not run mutmut")
    a = p.parse_args(argv)
    d = prepare(a.module, a.tests, a.work, a.head)
    print(f"mutating {a.module} in {d} with {len(a.tests)} test file(s)")
    if a.prepare_only:
        return 0
    mutmut = Path(sys.executable).with_name("mutmut")
    run = subprocess.run(["nice", "-n", "15", str(mutmut), "run", "--max-children", "1"], cwd=d,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    subprocess.run([sys.executable, str(ROOT / "scripts" / "mutation_score.py"), "--dir", str(d / "mutants")])
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
