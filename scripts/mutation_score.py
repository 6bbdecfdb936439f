"""Per-module mutation score of the last `mutmut run` (the mutants/*.py.meta files), for `make mutation-union`
(and each module's run of `make mutation`).

Killed (a test failed) and timeout (a mutant that hangs is caught too) count as killed; survived, "no tests" and
suspicious count against the score; mutants not checked (an interrupted run, or one restricted to some modules with
`mutmut run "core.archive.codec*"`) are listed apart, and a module none of whose mutants was checked shows "-".
Exits 1 when a module is under --min percent (docs/QUALITY.md: 85) or was not run at all."""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 24, -24, 152, 255, 36, 37}       # mutmut's exit codes for killed, timeout, type-check
SURVIVED = {0}
NO_TESTS = {5, 33}
NOT_CHECKED = {None, 2, 34}                      # not run yet, interrupted, skipped


def scores(root: Path) -> list[tuple[str, Counter]]:
    out = []
    for meta in sorted(root.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        c = Counter("killed" if x in KILLED else "survived" if x in SURVIVED else "no tests" if x in NO_TESTS
                    else "not checked" if x in NOT_CHECKED else "other" for x in codes)
        out.append((str(meta.relative_to(root))[:-len(".meta")], c))
    return out


def survivors(root: Path) -> list[tuple[str, str, int]]:
    """(module, function, mutant number) of every survivor, for checking each against docs/QUALITY.md's lists; a
    method is named Class.method (mutmut's key is `x\u01c1Class\u01c1method__mutmut_N`, a free function
    `x_function__mutmut_N`)."""
    out = []
    for meta in sorted(root.rglob("*.py.meta")):
        module = str(meta.relative_to(root))[:-len(".meta")]
        for key, code in sorted(json.loads(meta.read_text())["exit_code_by_key"].items()):
            if code in SURVIVED:
                name, _, number = key.rpartition(".")[2].rpartition("__mutmut_")
                name = ".".join(filter(None, name.split("\u01c1")[1:])) if "\u01c1" in name else name[2:]
                out.append((module, name, int(number)))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default="mutants", type=Path)
    p.add_argument("--min", type=float, default=85.0, help="fail when a module scores below this (percent)")
    p.add_argument("--survivors", action="store_true", help="list every survivor (module, function, number)")
    a = p.parse_args(argv)
    if a.survivors:
        for module, name, number in survivors(a.dir):
            print(f"{module} {name} {number}")
        return 0
    rows = scores(a.dir)
    if not rows:
        print(f"no mutmut results under {a.dir}/ (run `mutmut run` first)")
        return 1
    low, unrun = [], []
    print(f"{'module':40} {'killed':>7} {'survived':>9} {'no tests':>9} {'other':>6} {'unrun':>6} {'score':>7}")
    for name, c in rows:
        decided = c["killed"] + c["survived"] + c["no tests"] + c["other"]
        if not decided:
            unrun.append(name)
            shown = "-"
        else:
            score = 100.0 * c["killed"] / decided
            if score < a.min:
                low.append(name)
            shown = f"{score:.1f}%"
        print(f"{name:40} {c['killed']:7} {c['survived']:9} {c['no tests']:9} {c['other']:6} {c['not checked']:6} "
              f"{shown:>7}")
    total = sum((c for _, c in rows), Counter())
    decided = total["killed"] + total["survived"] + total["no tests"] + total["other"]
    print(f"{'all':40} {total['killed']:7} {total['survived']:9} {total['no tests']:9} {total['other']:6} "
          f"{total['not checked']:6} {100.0 * total['killed'] / max(decided, 1):6.1f}%")
    if unrun:
        print(f"not run: {', '.join(unrun)}")
    if low:
        print(f"under {a.min:.0f}%: {', '.join(low)} (`mutmut browse` or `mutmut show NAME` shows the survivors)")
    return 1 if low or unrun else 0


if __name__ == "__main__":
    sys.exit(main())
