"""scripts/pyspy_split.py: py-spy's raw stacks of a `make test` run, split by kind of process and by test file."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import pyspy_split  # noqa: E402

WORKER = 'process 10:"";process 11:"/x/.venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))"'
RAW = "\n".join([
    # an xdist worker in a test, importing; in a fixture file; idle (left out); a test module's own frame
    f"{WORKER};run (_pytest/runner.py:1);test_a (tests/unit/test_x.py:5);"
    "_find_and_load (<frozen importlib._bootstrap>:1) 7",
    f"{WORKER};run (_pytest/runner.py:1);community (tests/unit/archive/conftest.py:10);synthesize (core/synth.py:80) 5",
    f"{WORKER};run (_pytest/runner.py:1);test_a (tests/unit/test_x.py:5);Condition.wait (threading.py:331) 100",
    # a Spark daemon from the zip, the offload worker, a CLI node
    'process 10:"";process 20:"python3 -m pyspark.daemon pyspark.worker";<module> (<frozen zipimport>:695) 4',
    'process 10:"";process 21:"/x/.venv/bin/python -c from core.node.offload import _child_main; _child_main()";'
    "main (core/node/offload.py:80) 3",
    'process 10:"";process 22:"/x/.venv/bin/python -m core.cli node --config c.toml";run (core/node/runner.py:9) 2',
    "not a stack line",
])


def test_split_by_kind_and_test(tmp_path):
    raw = tmp_path / "prof.raw"
    raw.write_text(RAW + "\n")
    kinds, imports, pids, by_test, own = pyspy_split.split(str(raw))
    assert kinds == {"xdist worker": 12, "python3 -m pyspark.daemon pyspark.worker": 4,
                     "offload worker (core/node/offload.py)": 3, "archivist node": 2}
    assert imports == {"xdist worker": 7, "python3 -m pyspark.daemon pyspark.worker": 4}
    assert pids["xdist worker"] == {"11"}
    assert by_test == {"tests/unit/test_x.py": 7, "tests/unit/archive/conftest.py": 5}
    assert own == {"_find_and_load (<frozen importlib._bootstrap>)": 7, "synthesize (core/synth.py)": 5}
