"""One table for `make bench`: every benchmark records its figures here as it prints them (figure, its floor or
peer measured in the same run, the ratio, the goal), and tests/bench/conftest.py prints the whole table at the end
of the session and writes it to `bench-results.md` beside the repository's README (the machine, date and load
included), so that docs/BENCHMARKS.md can quote one run."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    area: str             # "build", "import", "fetch", ...
    name: str             # what was measured, with its size
    value: float
    unit: str             # "s", "MiB", "msg/s", "ms"
    reference: str = ""   # the floor or peer it is compared with
    ref_value: float | None = None
    goal: str = ""        # the goal, as text ("<= 1.5x", "< 0.15 s")

    @property
    def ratio(self) -> float | None:
        if self.ref_value in (None, 0):
            return None
        return self.value / self.ref_value

    def row(self) -> str:
        ref = f"{self.reference} {_num(self.ref_value)} {self.unit}" if self.reference else ""
        ratio = f"{self.ratio:.3g}x" if self.ratio is not None else ""
        return f"| {self.area} | {self.name} | {_num(self.value)} {self.unit} | {ref} | {ratio} | {self.goal} |"


def _num(v: float | None) -> str:
    if v is None:
        return ""
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


FIGURES: list[Figure] = []


def record(area: str, name: str, value: float, unit: str, reference: str = "", ref_value: float | None = None,
           goal: str = "") -> Figure:
    f = Figure(area, name, value, unit, reference, ref_value, goal)
    FIGURES.append(f)
    return f


def table(figures: list[Figure]) -> str:
    head = "| area | figure | value | floor / peer (same run) | ratio | goal |\n| --- | --- | --- | --- | --- | --- |"
    return "\n".join([head] + [f.row() for f in figures])


def pct(xs: list[float], q: float) -> float:
    """The q-quantile of xs (nearest rank); NaN when empty."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")
