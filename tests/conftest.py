import gc
import os
import signal

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# A run started in the background by a non-interactive shell (`make test &` in a script, some CI runners) inherits
# SIGINT *ignored*, and so does every child it starts: Python then installs no KeyboardInterrupt handler, and the
# cluster tests' Ctrl-C (SIGINT) to `archivist spark-master` / `spark-worker` did nothing; after their grace the
# tests SIGKILLed the command (exit -9) and its daemon's JVM was left running ("processes were still running in the
# namespaces"). Ctrl-C as from a terminal: the default handler, here and (through exec) in every child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config):
    # After gc.freeze() (below), Hypothesis's register_random check (gc.get_referrers) cannot see what holds trio's
    # module-level Random when trio is first imported inside a later test, and warns that it may be collected; it
    # is a module global, held for the life of the process.
    config.addinivalue_line("filterwarnings",
                            "ignore:It looks like `register_random` was passed:hypothesis.errors.HypothesisWarning")


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
