"""Spark's warm-up in the status bar: what it is doing, how far it is, and why anything waits for it.

The JVM's start has no measurable progress, so the bar is a busy bar with the seconds so far; once the session
exists, the first tiny job's tasks give a real fraction. The words come from `warmup_words` (no Qt), fed by
`warmup_stage` from the real SparkOwner and SparkJob on the warm-up's worker thread."""
from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from gui.views.progress import SmoothBar

JVM, FIRST_JOB, READY, FAILED = "jvm", "first-job", "ready", "failed"
REASON_BUILD = "the communities you own build their archives on Spark"
REASON_ANY = "Spark builds and imports archives"
READY_SHOWN_MS = 10_000


def warmup_stage(owner, job) -> tuple[str, float | None]:
    """(stage, fraction or None) of a running warm-up: the JVM and session first, then the first job's tasks."""
    if owner.spark_if_started is None:
        return JVM, None
    return FIRST_JOB, job.progress()


def warmup_words(stage: str, fraction: float | None, seconds: float, reason: str = REASON_ANY,
                 error: str = "") -> str:
    """One line for the status bar."""
    if stage == JVM:
        return (f"Starting Spark: launching Java ({seconds:.0f} s so far; the first start takes 10–60 s) — {reason}; "
                "the window works meanwhile")
    if stage == FIRST_JOB:
        pct = f", {fraction * 100:.0f} %" if fraction is not None else ""
        return f"Starting Spark: a first small job loads the Python workers ({seconds:.0f} s so far{pct})"
    if stage == READY:
        return f"Spark is ready ({seconds:.1f} s)"
    return f"Spark did not start: {error}"


class SparkStatus(QWidget):
    """A label and a bar, shown in the status bar while Spark starts (and briefly once it is ready)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("sparkStatus")
        self.label = QLabel("")
        self.label.setObjectName("sparkStatusText")
        self.bar = SmoothBar()               # repaints at most every 100 ms, never inside a setter
        self.bar.setTextVisible(False)
        self.bar.setFixedWidth(120)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.bar)
        self.stage = ""
        self.reason = REASON_ANY
        self._hide = QTimer(self, singleShot=True, interval=READY_SHOWN_MS)
        self._hide.timeout.connect(self.hide)
        self.hide()

    def show_stage(self, stage: str, fraction: float | None, seconds: float, error: str = "") -> None:
        self.stage = stage
        self.label.setText(warmup_words(stage, fraction, seconds, self.reason, error))
        self.label.setToolTip(self.label.text())
        self.setProperty("failed", stage == FAILED)
        if stage == JVM or (stage == FIRST_JOB and fraction is None):
            self.bar.setRange(0, 0)                 # busy: nothing to count yet
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(1000 if stage == READY else int((fraction or 0.0) * 1000))
        self.bar.setVisible(stage != FAILED)
        self.show()
        self._hide.stop()
        if stage == READY:
            self._hide.start()
