import gc
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# One class-data archive for every driver JVM of the run and of every child (core/pipeline/cds.py): a fixed path, so
# that no test with its own HOME starts a maker of its own; made once (per key) by _spark_class_data_archive below.
ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("ARCHIVIST_SPARK_CDS", str(ROOT / ".cache" / "spark-cds" / "driver.jsa"))
# Tests that start driver JVMs: the archive is made for them (a run of other tests does not pay for it).
SPARK_AREAS = ("tests/gui/", "tests/integration/pipeline/", "tests/integration/node/", "tests/bench/")

# A run started in the background by a non-interactive shell (`make test &` in a script, some CI runners) inherits
# SIGINT *ignored*, and so does every child it starts: Python then installs no KeyboardInterrupt handler, and the
# cluster tests' Ctrl-C (SIGINT) to `archivist spark-master` / `spark-worker` did nothing; after their grace the
# tests SIGKILLed the command (exit -9) and its daemon's JVM was left running ("processes were still running in the
# namespaces"). Ctrl-C as from a terminal: the default handler, here and (through exec) in every child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The order `make test` hands work to its xdist workers (`--dist loadgroup --no-loadscope-reorder`: collection
# order, each xdist_group whole to one worker). The benches that start the most JVMs (a cluster's daemons and
# executors, two drivers each) go after the GUI tests instead of first: at the run's start the class-data archive is
# still being made (~70-80 s, _spark_class_data_archive), and a JVM started before it is whole parses its classes from
# the jars (a driver ~3 s of CPU more, a daemon or executor ~1 s). Still early enough that the workers end
# together. (Spreading the network test modules, one xdist group each, among the unit tests left the idle CPU as it
# was, 109 CPU-s in a 352 s run: docs/QUALITY.md.)
ARCHIVE_HUNGRY = ("tests/bench/test_cluster_bench.py", "tests/bench/test_pipeline_bench.py")


# Tests that mostly wait on sockets, peers and deadlines (~half a core each): one xdist group, handed whole to one
# of make test's three workers just before the Spark pipeline tests, while the other two fill the core it leaves
# idle. Two workers both in them left about half of both cores idle (~47 CPU-s a run; docs/QUALITY.md).
NETWORK_AREAS = ("tests/integration/torrent/", "tests/integration/waku/", "tests/integration/codex/", "tests/interop/")


@pytest.hookimpl(tryfirst=True)   # before xdist's own, which turns each item's xdist_group into its scope
def pytest_collection_modifyitems(session, config, items):
    late = [i for i in items if i.nodeid.startswith(ARCHIVE_HUNGRY)]
    rest = [i for i in items if not i.nodeid.startswith(ARCHIVE_HUNGRY)]
    gui = [n for n, i in enumerate(rest) if i.nodeid.startswith("tests/gui/")]
    if late and gui:
        rest = rest[:gui[-1] + 1] + late + rest[gui[-1] + 1:]
    network = [i for i in rest if i.nodeid.startswith(NETWORK_AREAS)]
    rest = [i for i in rest if not i.nodeid.startswith(NETWORK_AREAS)]
    for item in network if rest else []:      # a run of socket tests alone keeps them spread over the workers
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group("network"))
    at = next((n for n, i in enumerate(rest) if i.nodeid.startswith("tests/integration/pipeline/")), len(rest))
    items[:] = rest[:at] + network + rest[at:]


@pytest.fixture(scope="module")
def fork_server():
    """The tests' fork server (tests/support/forked.py: kill -9 trials, `archivist` runs without a new interpreter),
    started by the first child and stopped after the module's last test: no process left."""
    from tests.support import forked
    yield forked
    forked.stop()


def pytest_configure(config):
    from tests.support.rewrite_share import share_for_worker
    share_for_worker(config)    # each xdist worker rewrites its share of the test files' asserts for all of them
    # After gc.freeze() (below), Hypothesis's register_random check (gc.get_referrers) cannot see what holds trio's
    # module-level Random when trio is first imported inside a later test, and warns that it may be collected; it
    # is a module global, held for the life of the process.
    config.addinivalue_line("filterwarnings",
                            "ignore:It looks like `register_random` was passed:hypothesis.errors.HypothesisWarning")


@pytest.fixture(scope="session", autouse=True)
def _spark_class_data_archive(request):
    """Start making the run's class-data archive with the product's maker (`python -m core.pipeline.cds_make`) in
    the background, once: its lock file sends the second xdist worker's maker away ("busy"). Not niced (the
    product's makers are): beside two busy workers a niced maker took ~4 min, and every driver started meanwhile
    paid ~3 s of CPU more. Drivers started before it is there run without it (slower, nothing else); tests/integration/pipeline/test_cds.py waits for
    it (make_shared_archive). Nothing when no selected test starts Spark or ARCHIVIST_SPARK_CDS=off. At the end
    the run waits for its maker (bounded, then killed): no process is left running."""
    if os.environ["ARCHIVIST_SPARK_CDS"].lower() == "off" or not any(
            item.get_closest_marker("spark") or any(a in item.nodeid for a in SPARK_AREAS)
            for item in request.session.items):
        yield
        return
    from core.pipeline import cds
    from core.pipeline.session import SparkSettings
    if cds.state(SparkSettings().conf())[2] is None:
        yield                                          # made by an earlier run (the checkout's ignored .cache/)
        return
    maker = subprocess.Popen(MAKER, cwd=ROOT, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=MAKER_ENV)
    try:
        yield
    finally:
        try:
            maker.wait(timeout=900)
        except subprocess.TimeoutExpired:
            maker.kill()
            maker.wait()


MAKER = [sys.executable, "-m", "core.pipeline.cds_make"]
MAKER_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def make_shared_archive() -> str | None:
    """Wait for (or make) the run's archive; None when it is there, else the maker's own words."""
    r = subprocess.run([*MAKER, "--wait"], cwd=ROOT, text=True, capture_output=True, timeout=1200, env=MAKER_ENV)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip()[-500:]


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_main_thread():
    """Collect each test's cyclic garbage here, on the main thread. Otherwise a cycle holding a finished test's Qt
    objects can be freed later by a collection that a worker thread triggers (a decode in the inspector's pool),
    and Qt objects destroyed off the GUI thread crash the process (seen once as a segfault in CI).

    Then gc.freeze(): what survived is moved out of the collector's sight, so the next test's collection scans
    only what was made since. A full collection of a worker that has imported libp2p, Spark and Qt cost ~0.16 s
    per test (up to 1.6 s; minutes over the suite). A frozen object that only later becomes cyclic garbage is
    never collected (a little memory), so never off the GUI thread either."""
    yield
    gc.collect()
    gc.freeze()
