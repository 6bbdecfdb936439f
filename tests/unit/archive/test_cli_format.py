"""The inspect listing's fast timestamp formatter writes exactly what the plain one (strftime) writes."""
import pytest
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


@pytest.mark.parametrize("t,text", [(0, "1970-01-01 00:00"), (1_700_000_000, "2023-11-14 22:13"),
                                    (2**64 - 1, str(2**64 - 1)), (-2**63, str(-2**63)), (float("nan"), "nan")])
def test_one_rule_for_a_timestamp_shown_to_people(t, text):
    """core.archive.inspect.utc_text, used by `archivist inspect`, `codex-inspect` (which raised OverflowError on a
    hostile index's 2**64 - 1: a traceback), the GUI's tables, report and timeline."""
    from core.archive.inspect import utc_text
    from core.codex import cli as codex_cli
    from gui.models import fmt_time
    assert utc_text(t) == codex_cli._ts(t) == fmt_time(t) == text
