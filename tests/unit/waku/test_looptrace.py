"""core/waku/looptrace.py: the loop trace counts a tagged handler's scheduling points and the run loop's passes."""
import json
import time

import trio

from core.waku import looptrace


def test_a_tagged_task_is_summarised_with_its_steps_and_the_passes(tmp_path, monkeypatch):
    monkeypatch.setenv(looptrace.LOOPTRACE_ENV, str(tmp_path / "trace.json"))
    monkeypatch.setattr(looptrace, "_ACTIVE", None)
    [trace] = looptrace.instruments()

    async def handler():
        looptrace.tag("store v3")
        await trio.lowlevel.checkpoint()          # two scheduling points: three steps
        await trio.lowlevel.checkpoint()

    async def busy():                             # a step of ~8 ms: a long pass
        end = time.monotonic() + 0.008
        while time.monotonic() < end:
            pass

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(handler)
            n.start_soon(handler)
            n.start_soon(busy)
            n.start_soon(trio.sleep, 0.01)        # an untagged task: not summarised
    t0 = time.monotonic()
    trio.run(main, instruments=[trace])
    looptrace.dump()
    raw = json.loads((tmp_path / "trace.json").read_text())
    s = looptrace.summary(raw, t0, time.monotonic())
    assert list(s["tagged"]) == ["store v3"]
    v = s["tagged"]["store v3"]
    assert v["yields"]["n"] == 2 and v["yields"]["p50"] == 2 and v["yields"]["max"] == 2
    assert v["life"]["p50"] >= v["run"]["p50"] > 0
    assert s["batches"]["n"] >= 3
    [long] = [b for b in s["long_batches"] if any(name == "test_a_tagged_task_is_summarised_with_its_steps_and_the_"
                                                  "passes.<locals>.busy" for name, _, _ in b["top"])]
    assert long["ms"] >= 8
    # outside the window: nothing
    assert looptrace.summary(raw, 0, t0 - 1) == {"batches": {}, "long_batches": [], "gc2": {}, "gc2_cpu": {},
                                                 "tagged": {}}


def test_full_collections_are_recorded(tmp_path, monkeypatch):
    import gc
    trace = looptrace.LoopTrace(str(tmp_path / "t.json"))
    gc.callbacks.append(trace.on_gc)
    try:
        gc.collect(1)
        gc.collect(2)
    finally:
        gc.callbacks.remove(trace.on_gc)
    assert len(trace.gc2) == 1 and trace.gc2[0][1] >= 0 and trace.gc2[0][2] >= 0
