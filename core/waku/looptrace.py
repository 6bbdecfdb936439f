"""Where a request's time goes on the node's event loop: a trio Instrument, for benchmarks only.

With ARCHIVIST_WAKU_LOOPTRACE=FILE the node's trio thread runs with `LoopTrace` (embedded._run_profiled), which
writes JSON to FILE when the node stops; `summary(raw, t0, t1)` cuts it to a time window (a benchmark phase):
- `batches`: every pass of trio's run loop, (start, duration). Every runnable task runs one step per pass, so a
  task that yields (a socket send, a lock that yields) waits about one pass before it runs again;
- `long_batches`: the passes over 5 ms and their longest task steps, wall and CPU time of the node's thread (a
  step far longer than its CPU time is the OS running another process, not work on the loop);
- `gc2`: full garbage collections (the oldest generation), (start, wall, CPU): each stops whatever step runs;
- `steps`: per coroutine name, task steps, their total and longest wall time;
- `tagged`: tasks marked with `tag(kind)` (the store v3 and lightpush v3 handlers): lifetime (spawned to exited),
  own run time, CPU time and number of steps; `summary` gives `yields` (scheduling points: steps - 1), each a
  wait of about one pass. Lifetime - own run time is time spent waiting for the loop.
Off (no instrument, no cost) when the variable is unset. Timestamps are time.monotonic(), the same clock in every
process, so the benchmark cuts the trace with its own phase times.
"""
from __future__ import annotations

import collections
import json
import time

import trio

LOOPTRACE_ENV = "ARCHIVIST_WAKU_LOOPTRACE"
_ACTIVE: "LoopTrace | None" = None


def tag(kind: str) -> None:
    """Mark the current task (a request handler) so its lifetime, run time and steps are summarised by `kind`."""
    if _ACTIVE is not None:
        _ACTIVE.tags[trio.lowlevel.current_task()] = kind


def _pcts(xs: list[float]) -> dict:
    xs = sorted(xs)
    if not xs:
        return {}
    at = lambda q: xs[min(len(xs) - 1, int(len(xs) * q))]   # noqa: E731
    return {"n": len(xs), "p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": xs[-1]}


class LoopTrace(trio.abc.Instrument):
    def __init__(self, path: str):
        self.path = path
        self.clock = time.monotonic           # the same clock in every process: phases are cut by time
        self.tags: dict = {}
        self._step_t = self._step_cpu = 0.0
        self._exited = None
        self._gc_t: float | None = None
        self._gc_cpu = 0.0
        self.gc2: list[tuple] = []     # full collections (start, wall, CPU of the thread): a pause of every task
        self._batch_t: float | None = None
        self._batch_steps: list = []
        self.batches: list[tuple[float, float]] = []   # (start, duration) of each pass
        self.long_batches: list = []          # (start, duration, steps, [(name, wall s, CPU s), ...]) over 5 ms
        self.steps: dict[str, list] = collections.defaultdict(lambda: [0, 0.0, 0.0])   # count, total, max
        self._life: dict = {}                 # task -> [spawned, run time, steps, CPU]
        self.tagged: dict[str, list] = collections.defaultdict(list)   # kind -> [(spawned, life, run, steps, CPU)]

    def on_gc(self, phase: str, info: dict) -> None:
        """gc.callbacks: every collection of the oldest generation, (start, duration): it stops the loop's step."""
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._gc_t, self._gc_cpu = self.clock(), time.thread_time()
        elif self._gc_t is not None:
            self.gc2.append((self._gc_t, self.clock() - self._gc_t, time.thread_time() - self._gc_cpu))
            self._gc_t = None

    def after_io_wait(self, timeout) -> None:
        self._batch_t = self.clock()
        self._batch_steps = []

    def before_io_wait(self, timeout) -> None:
        if self._batch_t is None:
            return
        d = self.clock() - self._batch_t
        self.batches.append((self._batch_t, d))
        if d > 0.005 and len(self.long_batches) < 5000:
            top = sorted(self._batch_steps, key=lambda s: -s[1])[:4]
            self.long_batches.append((self._batch_t, d, len(self._batch_steps), top))
        self._batch_t = None

    def task_spawned(self, task) -> None:
        self._life[task] = [self.clock(), 0.0, 0, 0.0]

    def before_task_step(self, task) -> None:
        self._step_t = self.clock()
        self._step_cpu = time.thread_time()

    def after_task_step(self, task) -> None:
        d = self.clock() - self._step_t
        cpu = time.thread_time() - self._step_cpu     # a step far longer than its CPU: the OS ran something else
        name = task.coro.cr_code.co_qualname if hasattr(task.coro, "cr_code") else task.name
        s = self.steps[name]
        s[0] += 1
        s[1] += d
        s[2] = max(s[2], d)
        if self._batch_t is not None:
            self._batch_steps.append((name, d, cpu))
        life = self._life.get(task)
        if life is not None:
            life[1] += d
            life[2] += 1
            life[3] += cpu
        if task is self._exited:            # trio reports the exit before the end of the task's last step
            self._exited = None
            self._life.pop(task, None)
            kind = self.tags.pop(task, None)
            if life is not None and kind is not None:
                self.tagged[kind].append((life[0], self.clock() - life[0], life[1], life[2], life[3]))

    def task_exited(self, task) -> None:
        self._exited = task

    def raw(self) -> dict:
        return {"batches": self.batches, "long_batches": self.long_batches, "gc2": self.gc2,
                "steps": {n: v for n, v in sorted(self.steps.items(), key=lambda kv: -kv[1][1])[:40]},
                "tagged": self.tagged}

    def dump(self) -> None:
        with open(self.path, "w") as f:
            json.dump(self.raw(), f)


def instruments() -> list:
    """[LoopTrace] when ARCHIVIST_WAKU_LOOPTRACE names a file (and it becomes the active trace), else []."""
    global _ACTIVE
    import os
    path = os.environ.get(LOOPTRACE_ENV)
    if not path:
        return []
    import gc
    _ACTIVE = LoopTrace(path)
    gc.callbacks.append(_ACTIVE.on_gc)
    return [_ACTIVE]


def dump() -> None:
    if _ACTIVE is not None:
        _ACTIVE.dump()


def summary(raw: dict, t0: float, t1: float) -> dict:
    """What happened between monotonic times t0 and t1 (a benchmark phase) in a dumped trace, in ms."""
    ms = 1e3
    scale = lambda d: {k: (v * ms if k != "n" else v) for k, v in d.items()}   # noqa: E731
    out = {"batches": scale(_pcts([d for t, d in raw["batches"] if t0 <= t <= t1])),
           "long_batches": [{"ms": round(d * ms, 1), "tasks": n,
                             "top": [(nm, round(s * ms, 2), round(c * ms, 2)) for nm, s, c in top]}
                            for t, d, n, top in sorted((b for b in raw["long_batches"] if t0 <= b[0] <= t1),
                                                       key=lambda b: -b[1])[:5]],
           "gc2": scale(_pcts([g[1] for g in raw.get("gc2", []) if t0 <= g[0] <= t1])),
           "gc2_cpu": scale(_pcts([g[2] for g in raw.get("gc2", []) if t0 <= g[0] <= t1])),
           "tagged": {}}
    for kind, xs in raw["tagged"].items():
        xs = [x for x in xs if t0 <= x[0] <= t1]
        if xs:
            out["tagged"][kind] = {"life": scale(_pcts([x[1] for x in xs])), "run": scale(_pcts([x[2] for x in xs])),
                                   "yields": _pcts([x[3] - 1 for x in xs]), "cpu": scale(_pcts([x[4] for x in xs]))}
    return out
