"""The inspect listing's fast timestamp formatter writes exactly what the plain one (strftime) writes."""
from hypothesis import given, settings, strategies as st

from core.archive.cli import _Timestamps, _ts

EDGES = [0, 59, 60, 86_399, 86_400, 951_782_400, 1_600_000_000, 253_402_300_799, 253_402_300_800, -1, -86_401,
         10 ** 12, 2 ** 63 - 1]


def test_edges():
    fast = _Timestamps()
    assert [fast(t) for t in EDGES] == [_ts(t) for t in EDGES]


@settings(max_examples=2000, deadline=None)
@given(st.integers(min_value=-2 ** 40, max_value=2 ** 40))
def test_any_timestamp(t):
    assert _Timestamps()(t) == _ts(t)
