"""Mutation testing of ONE module with a narrowed test selection, outside the checkout (docs/QUALITY.md).

    .venv/bin/python scripts/mutation_module.py core/archive/codec.py [tests/unit/archive/test_codec.py ...]
    .venv/bin/python scripts/mutation_score.py --dir /tmp/archivist-mutation/codec/mutants
    .venv/bin/python scripts/mutation_module.py --all        # `make mutation`: every module in turn

copies core/ and tests/ into WORK/NAME (NAME: the module's file name; WORK: --work, /tmp/archivist-mutation by
default), writes there a pyproject.toml whose [tool.mutmut] mutates only that module and runs only the given test
files, and runs mutmut there (niced, one child). Why: `make mutation-union` runs every module with the union of all
their tests; mutmut then runs, for each mutant, every listed test that calls the mutated function, and the
functions nearly every test calls (keccak256, ArchiveFolder.append, the control node's build) cost a minute per
mutant on a loaded machine. The module's own test files kill nearly as many (the union can only kill more) in a
fraction of that. The checkout is not touched (other work can go on in it), and --head takes core/ as committed
instead of the working tree.
Survivors: `cd WORK/NAME && mutmut results`, `mutmut show NAME`. Without test files a module runs with its own from
MODULES; --all runs every module of MODULES in turn (one mutmut at a time), prints each one's score and how long it
took, and appends both to WORK/summary.tsv, so that a run stopped by a deadline says where the next one resumes."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from mutation_score import scores  # noqa: E402

# Each mutated module with the unit tests that cover it (their union is pyproject's test selection; a test in
# tests/unit/test_mutation_config_mutants.py keeps the two in step). Quickest first, so that a run cut short has
# done most modules; control.py last (its build and retention mutants run most of its tests each).
A, N, S = "tests/unit/archive/", "tests/unit/node/", "tests/unit/status/"
MODULES: dict[str, list[str]] = {
    "core/history_import.py": ["tests/unit/test_history_import_mutants.py", "tests/unit/test_history_import_authors.py",
                               "tests/unit/test_history_import_pool.py",
                               "tests/unit/test_history_import_preview_mutants.py"],
    "core/torrent/selection.py": ["tests/unit/torrent/test_selection.py", "tests/unit/torrent/test_selection_mutants.py",
                                  "tests/unit/torrent/test_magnet_and_cli.py"],
    "core/torrent/magnet.py": ["tests/unit/torrent/test_magnet.py", "tests/unit/torrent/test_magnet_mutants.py"],
    "core/node/links.py": [N + "test_link_gate_clock.py", N + "test_links_mutants.py"],
    "core/archive/index_check.py": [A + "test_index_trust.py", A + "test_index_check_mutants.py",
                                    A + "test_index_decode.py"],
    "core/status/share_link.py": [S + "test_share_link.py", S + "test_share_link_mutants.py"],
    "core/status/payload_v1.py": [S + "test_payload_v1.py", S + "test_payload_v1_mutants.py"],
    "core/status/application_metadata.py": [S + "test_application_metadata.py",
                                            S + "test_application_metadata_mutants.py"],
    "core/archive/rebuild.py": [A + "test_rebuild_mutants.py", A + "test_index_trust.py"],
    "core/node/member.py": [N + "test_member_mutants.py"],
    "core/node/link_catchup.py": [N + "test_link_catchup.py"],
    "core/archive/codec.py": [A + "test_codec.py", A + "test_codec_mutants.py", A + "test_index_decode.py",
                              A + "test_wire_vector.py"],
    "core/status/archive_encryption.py": [S + "test_archive_encryption.py", S + "test_archive_encryption_mutants.py",
                                          A + "test_encrypted_build.py"],
    "core/archive/verify.py": [A + "test_verify.py", A + "test_verify_honest.py", A + "test_verify_mutants.py"],
    "core/archive/folder.py": [A + "test_folder_mutants.py", A + "test_folder_append_mutants.py",
                               A + "test_index_trust.py", N + "test_damaged_folder.py", A + "test_build.py"],
    "core/node/control.py": [N + "test_control_mutants.py", N + "test_control_retention_mutants.py",
                             N + "test_control_build_mutants.py", N + "test_retention_safety.py",
                             N + "test_whole_windows.py", N + "test_config_schedule.py", N + "test_damaged_folder.py"],
}


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


def run_one(module: str, tests: list[str], work: Path, head: bool, nice: int) -> tuple[int, float | None, str, Counter]:
    """Prepare and run one module; returns mutmut's exit code, the score (None: nothing was decided), a
    summary line (also appended to WORK/summary.tsv) and the counts behind it."""
    d = prepare(module, tests, work, head)
    print(f"mutating {module} in {d} with {len(tests)} test file(s)", flush=True)
    mutmut = Path(sys.executable).with_name("mutmut")
    t0 = time.monotonic()
    run = subprocess.run(["nice", "-n", str(nice), str(mutmut), "run", "--max-children", "1"], cwd=d,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    took = time.monotonic() - t0
    subprocess.run([sys.executable, str(ROOT / "scripts" / "mutation_score.py"), "--dir", str(d / "mutants")])
    c = sum((c for _, c in scores(d / "mutants")), Counter())
    pct, line = summary_line(module, c, took)
    with open(work / "summary.tsv", "a") as f:
        f.write(line + "\n")
    return run.returncode, pct, line, c


def summary_line(name: str, c: Counter, seconds: float) -> tuple[float | None, str]:
    """The score over the decided mutants (None when none was) and the tab-separated line of summary.tsv."""
    decided = c["killed"] + c["survived"] + c["no tests"] + c["other"]
    pct = 100.0 * c["killed"] / decided if decided else None
    score = f"{pct:.1f}%" if pct is not None else "-"
    return pct, (f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())}\t{name}\t{sum(c.values())}\t{c['killed']}\t"
                 f"{c['survived']}\t{c['no tests']}\t{c['not checked']}\t{score}\t{seconds / 60:.1f} min")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", nargs="?", help="the module to mutate, e.g. core/node/member.py")
    p.add_argument("tests", nargs="*", help="the test files (or folders) that run for its mutants (default: MODULES)")
    p.add_argument("--all", action="store_true", help="every module of MODULES in turn")
    p.add_argument("--work", type=Path, default=Path("/tmp/archivist-mutation"))
    p.add_argument("--head", action="store_true", help="mutate core/ as committed (HEAD), not the working tree")
    p.add_argument("--nice", type=int, default=15, help="niceness of the mutmut run (default 15)")
    p.add_argument("--prepare-only", action="store_true", help="make the folder, do not run mutmut")
    p.add_argument("--min", type=float, help="exit 1 when a module scores below this (percent) or was not run")
    a = p.parse_args(argv)
    if a.all == bool(a.module):
        p.error("give one module, or --all")
    jobs = list(MODULES.items()) if a.all else [(a.module, a.tests or MODULES.get(a.module) or [])]
    if not jobs[0][1]:
        p.error(f"{a.module} is not in MODULES: name its test files")
    a.work.mkdir(parents=True, exist_ok=True)
    if a.prepare_only:
        for module, tests in jobs:
            print(f"prepared {prepare(module, tests, a.work, a.head)}")
        return 0
    worst, lines, total, t0 = 0, [], Counter(), time.monotonic()
    for module, tests in jobs:
        rc, pct, line, c = run_one(module, tests, a.work, a.head, a.nice)
        low = a.min is not None and (pct is None or pct < a.min)
        worst, lines = worst or rc or int(low), lines + [line + ("\tUNDER MIN" if low else "")]
        total += c
    if len(jobs) > 1:
        lines.append(summary_line(f"all {len(jobs)} modules", total, time.monotonic() - t0)[1])
    print("\n".join(["date\tmodule\tmutants\tkilled\tsurvived\tno tests\tunrun\tscore\ttime", *lines]))
    return worst


if __name__ == "__main__":
    sys.exit(main())
