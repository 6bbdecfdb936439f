"""While a Spark build job runs on the owner thread, a timer on the Qt main thread keeps firing: the GUI never
waits on Spark (issue 4). The stall figure is printed beside the idle reference measured in the same run."""
import time

from core.pipeline.build import submit_build
from core.synth import synthesize
from gui.measure import StallMeter


def test_timer_keeps_ticking_during_a_build_job(qtbot, spark_owner, tmp_path, capsys):
    s = synthesize(tmp_path / "m.sqlite", messages=40_000, weeks=10, channels=3, seed=8)
    topics = [bytes.fromhex(t[2:]) for t in s.topics]
    meter = StallMeter(5)
    meter.start()
    qtbot.wait(1000)
    idle = meter.stop()
    meter.start()
    t0 = time.perf_counter()
    job = submit_build(spark_owner, s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end)
    qtbot.waitUntil(job.done, timeout=300_000)
    seconds = time.perf_counter() - t0
    busy = meter.stop()
    res = job.result(0)
    with capsys.disabled():
        print("\n" + idle.line("idle main thread (reference)"))
        print(busy.line(f"main thread during a Spark build ({res.messages} messages, {seconds:.1f} s)"))
    assert res.messages == 40_000 and len(res.new_archive_ids) >= 10
    assert busy.samples > 10 * seconds          # ~200 ticks/s asked; the thread kept serving its timer
    # A GUI that waited on Spark would stall for the whole job (seconds). Scheduling noise on a loaded 2-core
    # machine reaches ~100 ms (CI once measured 112 ms), so the bound separates the two without timing the machine;
    # the figure itself is printed above for the benchmark record.
    assert busy.max_ms < min(1000.0, seconds * 1000 / 4), busy.line("stalled")
