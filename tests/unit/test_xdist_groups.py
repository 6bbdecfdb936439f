"""`make test` relies on `--dist loadgroup` keeping each `xdist_group` on one worker: the hidden-worker cluster of
tests/integration/pipeline (one per group, package-scoped), js-waku's payload checks, the headless nodes' shared
control. pytest 9.2 with pytest-xdist 3.8.0 silently stopped grouping (pytest-xdist#1386: the group is written into a
node id field pytest no longer reads), so each worker started its own cluster. This runs the pinned pair on a small
module and fails if a group is split again."""
from __future__ import annotations

import re
import subprocess
import sys

MODULE = '''
import pytest

@pytest.mark.xdist_group("g1")
@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    pass

@pytest.mark.parametrize("i", range(4))
def test_free(i):
    pass
'''


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    (tmp_path / "test_groups.py").write_text(MODULE)
    p = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                        "test_groups.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\] .*PASSED test_groups\.py::(test_\w+)\[(\d)\](@\w+)?", p.stdout)
    grouped = {(worker, suffix) for worker, name, _, suffix in ran if name == "test_grouped"}
    assert len(ran) == 8, p.stdout[-3000:]
    assert len(grouped) == 1 and next(iter(grouped))[1] == "@g1", p.stdout[-3000:]   # one worker, the group's id
