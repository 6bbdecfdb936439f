"""Spark's warm-up in the window's status bar: the stage (Java starting, then a first small job), its progress
(a busy bar while nothing can be counted, then the job's tasks) and why anything waits for it; a warm-up that
cannot start says why in one line. The failing case starts no JVM; the real warm-up needs ARCHIVIST_SLOW=1."""
from __future__ import annotations

import os

import pytest

from gui.views.spark_status import FAILED, FIRST_JOB, JVM, READY, REASON_BUILD, warmup_words


def no_live_session_owner() -> bool:
    from core.pipeline import session
    return session._default is None or session._default._closed


def test_words_of_each_stage():
    assert warmup_words(JVM, None, 3.4, REASON_BUILD) == (
        "Starting Spark: launching Java (3 s so far; the first start takes 10–60 s) — the communities you own build "
        "their archives on Spark; the window works meanwhile")
    assert warmup_words(FIRST_JOB, 0.25, 14.0) == (
        "Starting Spark: a first small job loads the Python workers (14 s so far, 25 %)")
    assert warmup_words(READY, 1.0, 21.26) == "Spark is ready (21.3 s)"
    assert warmup_words(FAILED, None, 2.0, error="no worker") == "Spark did not start: no worker"


def test_warm_up_shows_its_reason_then_why_it_failed(qtbot, window, tmp_path, monkeypatch):
    from core.pipeline import session
    from core.pipeline.session import SparkSettings
    from gui.app import warm_spark
    # the process's default owner may be the pipeline tests' session-wide one (same xdist worker), which a window
    # does not close (gui/spark_share.py): this test's window gets an owner of its own, with its settings
    monkeypatch.setattr(session, "_default", None)
    missing = tmp_path / "spark.secret"
    warm_spark(window, SparkSettings(master="spark://127.0.0.1:7077", secret_file=str(missing)), REASON_BUILD)
    st = window.spark_status
    assert st.isVisible() and st.stage == JVM
    assert st.label.text().startswith("Starting Spark: launching Java (0 s so far") and REASON_BUILD in st.label.text()
    assert (st.bar.minimum(), st.bar.maximum()) == (0, 0) and st.bar.isVisible()     # busy: nothing to count yet
    qtbot.waitUntil(lambda: st.stage == FAILED, timeout=30_000)
    assert st.label.text() == f"Spark did not start: Spark secret file {missing} does not exist"
    assert st.isVisible() and not st.bar.isVisible()
    assert window.spark_owner is not None and window.spark_owner.spark_if_started is None   # no JVM was started
    assert any(r[2] == "archivist.sparkFailed" for r in window.log.model.rows())
    owner = window.spark_owner
    window.close()
    assert not owner.thread.is_alive()           # its only holder closed: the owner went with it


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("ARCHIVIST_SLOW") != "1", reason="starts a JVM: ARCHIVIST_SLOW=1")
def test_real_warm_up_shows_java_then_the_first_job_then_ready(qtbot, window):
    from core.pipeline.session import SparkSettings
    from gui.app import warm_spark
    assert no_live_session_owner(), "an earlier test left the process's Spark owner running"
    st = window.spark_status
    seen: list[tuple[str, float | None, str, tuple[int, int]]] = []
    show = st.show_stage

    def record(stage, fraction, seconds, error=""):
        show(stage, fraction, seconds, error)
        seen.append((stage, fraction, st.label.text(), (st.bar.minimum(), st.bar.maximum())))
    st.show_stage = record
    from pyspark import SparkContext
    cold = SparkContext._gateway is None      # an earlier test of this process may have left its JVM running
    with qtbot.waitSignal(window.spark_ready, timeout=600_000):
        warm_spark(window, SparkSettings(master="local[1]"))
    stages = [s for s, *_ in seen]
    assert stages[0] == JVM and stages[-1] == READY and FAILED not in stages
    assert stages.index(READY) == len(stages) - 1 and all(s in (JVM, FIRST_JOB, READY) for s in stages)
    jvm = [x for x in seen if x[0] == JVM]
    assert (len(jvm) > 1 or not cold) and all(bar == (0, 0) for *_, bar in jvm)   # busy bar, seconds counting up
    job = [f for s, f, *_ in seen if s == FIRST_JOB and f is not None]
    assert job == sorted(job)                                        # the first job's progress never goes back
    assert seen[-1][2].startswith("Spark is ready (") and seen[-1][3] == (0, 1000)
    assert window.spark_owner.spark_if_started is not None
