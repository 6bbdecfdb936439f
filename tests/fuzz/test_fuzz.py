"""Every decoder of outside data, fuzzed (tests/fuzz/driver.py): 10,000 inputs each by default
(ARCHIVIST_FUZZ=N for more; `make fuzz` runs 1,000,000). Passes only with zero unhandled exceptions and no slow
input; prints inputs/s and the count of each outcome."""
import os

import pytest

from tests.fuzz.driver import DEFAULT_INPUTS, run_target
from tests.fuzz.targets import TARGETS

INPUTS = int(os.environ.get("ARCHIVIST_FUZZ", DEFAULT_INPUTS))


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_decoder_survives_fuzzing(target, capsys):
    res = run_target(target, INPUTS, int(os.environ.get("ARCHIVIST_FUZZ_SEED", 1)))
    with capsys.disabled():
        print("\n" + res.summary())
    assert res.inputs == INPUTS
    assert not res.failures, "\n".join(f"{k}: {m}; input {d[:80].hex()}" for k, m, d in res.failures)
    # the mutations reach past the first check: some inputs decode, some are refused
    assert sum(n for o, n in res.outcomes.items() if not o.startswith(("error:", "CRASH"))) > INPUTS // 100, \
        res.outcomes
