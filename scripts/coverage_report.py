"""Merges the slipcover JSON files written by scripts/coverage_hook.py and prints the branch coverage of core/
(`make test` runs it at the end). Files no process imported count as not covered at all."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import slipcover as sc
from slipcover.slipcover import add_summaries

ROOT = Path(__file__).resolve().parents[1]


def merged(folder: Path) -> dict:
    unseen = sc.Slipcover(branch=True, source=[str(ROOT / "core")], omit=[str(ROOT / "core/pb/*_pb2.py")])
    total = unseen.get_coverage()      # every source file, none executed
    for path in sorted(folder.glob("*.json")):
        try:
            sc.merge_coverage(total, json.loads(path.read_text()))
        except (ValueError, sc.SlipcoverError) as e:
            print(f"coverage: skipped {path.name}: {e}", file=sys.stderr)
    return total


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else ROOT / ".coverage-data"
    files = list(folder.glob("*.json"))
    if not files:
        print(f"coverage: no data in {folder}", file=sys.stderr)
        return 1
    cov = merged(folder)
    cov["files"] = {str(Path(k).resolve().relative_to(ROOT)) if Path(k).is_absolute() else k: v
                    for k, v in cov["files"].items()}
    add_summaries(cov)
    sc.print_coverage(cov, skip_covered=True, missing_width=60)
    s = cov["summary"]
    lines = s["covered_lines"] + s["missing_lines"]
    branches = s["covered_branches"] + s["missing_branches"]
    print(f"branch coverage of core/: {s['percent_covered']:.1f}% (lines {s['covered_lines']}/{lines}, branches "
          f"{s['covered_branches']}/{branches}; from {len(files)} processes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
