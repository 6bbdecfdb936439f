"""The cluster watchdog's rule (session.ExecutorWatch), on a clock the test moves: a job without any executor is
given up exactly once `executor_timeout` has passed, never before, and an executor seen in the meantime starts the
count again. The integration tests (test_export_cluster.py, test_netns_cluster.py) show the one line it leads to;
this is where "not before the timeout" is checked, without timing anything."""
from core.pipeline.session import ExecutorWatch


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def looks(watch: ExecutorWatch, clock: Clock, times: int, every: float, executors: int) -> list[bool]:
    """What `times` looks, `every` seconds apart, each seeing `executors`, answered."""
    out = []
    for _ in range(times):
        clock.now += every
        out.append(watch.observe(executors))
    return out


def test_gives_up_at_the_timeout_and_not_before():
    clock = Clock()
    watch = ExecutorWatch(15.0, clock)
    assert looks(watch, clock, 14, 1.0, 0) == [False] * 14
    clock.now += 0.999
    assert watch.observe(0) is False          # 14.999 s without an executor
    clock.now += 0.001
    assert watch.observe(0) is True           # 15 s
    clock.now += 1.0
    assert watch.observe(0) is True           # and it stays given up (a later Spark job is cancelled too)


def test_an_executor_seen_in_time_starts_the_count_again():
    clock = Clock()
    watch = ExecutorWatch(5.0, clock)
    clock.now += 4.0
    assert watch.observe(0) is False
    clock.now += 0.5
    assert watch.observe(2) is False          # a worker came: 4.5 s are forgotten
    clock.now += 4.9
    assert watch.observe(0) is False          # 4.9 s since the executor was last seen
    clock.now += 0.1
    assert watch.observe(0) is True           # 5 s since then: every worker lost
    assert watch.observe(1) is False          # seen again before the job was cancelled: keeps going


def test_executors_all_along_never_give_up():
    clock = Clock()
    watch = ExecutorWatch(1.0, clock)
    assert looks(watch, clock, 100, 10.0, 1) == [False] * 100


def test_a_slow_look_counts_the_time_it_took():
    clock = Clock()                            # looks come late on a loaded machine: time decides, not their number
    watch = ExecutorWatch(5.0, clock)
    clock.now += 6.0
    assert watch.observe(0) is True
