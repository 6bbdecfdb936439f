"""GUI responsiveness figures: cold start (process start -> window painted) and the GUI-thread stall while the
demo builds, downloads and imports.  `python -m gui.measure cold|stall|all` prints them."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QElapsedTimer, QObject, Qt, QTimer


@dataclass
class StallFigures:
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    def line(self, label: str) -> str:
        return (f"{label}: {self.samples} ticks, GUI stall p50 {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, "
                f"max {self.max_ms:.1f} ms")


class StallMeter(QObject):
    """A precise timer on the GUI thread; each tick records how late it fired (= how long the thread stalled)."""

    def __init__(self, interval_ms: int = 5, parent: QObject | None = None):
        super().__init__(parent)
        self.interval = interval_ms
        self.delays: list[float] = []
        self._clock = QElapsedTimer()
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._last = 0

    def start(self) -> None:
        self.delays.clear()
        self._clock.start()
        self._last = self._clock.nsecsElapsed()
        self._timer.start()

    def stop(self) -> StallFigures:
        self._timer.stop()
        return self.figures()

    def _tick(self) -> None:
        now = self._clock.nsecsElapsed()
        self.delays.append(max(0.0, (now - self._last) / 1e6 - self.interval))
        self._last = now

    def figures(self, since: int = 0, until: int | None = None) -> StallFigures:
        """Figures of ticks number `since` to `until` (a phase of a run; default: all)."""
        d = sorted(self.delays[since:until]) or [0.0]
        return StallFigures(len(self.delays[since:until]), statistics.median(d), d[min(len(d) - 1, int(len(d) * 0.99))], d[-1])


def cold_start(runs: int = 3) -> list[float]:
    """Seconds from `python` process start to a painted main window (offscreen unless a display is set)."""
    code = ("import sys, time; from gui.app import make_app; from gui.main_window import MainWindow; "
            "from PySide6.QtCore import QSettings, QTimer; import tempfile, os; "
            "a = make_app(); w = MainWindow(settings=QSettings(os.path.join(tempfile.mkdtemp(), 's.ini'), "
            "QSettings.Format.IniFormat)); w.show(); a.processEvents(); w.repaint(); "
            "print('VISIBLE', flush=True); QTimer.singleShot(0, a.quit); a.exec()")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env,
                             cwd=str(Path(__file__).resolve().parent.parent))
        for line in p.stdout:                      # type: ignore[union-attr]
            if line.startswith("VISIBLE"):
                out.append(time.perf_counter() - t0)
                break
        p.wait(30)
    return out


def python_baseline(runs: int = 3) -> list[float]:
    """Reference: a bare `python -c pass` on the same machine in the same run."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        out.append(time.perf_counter() - t0)
    return out


@dataclass
class DemoStall:
    idle: StallFigures
    busy: StallFigures          # the whole run: start + work
    seconds: float
    archives: int
    messages: int
    notes: list[str] = field(default_factory=list)
    start: StallFigures | None = None   # engines started (Waku, libtorrent) and the past chat stored
    work: StallFigures | None = None    # build + download + import
    cpu: tuple[float, float] = (0.0, 0.0)   # CPU seconds of the window's own process in start and in work


def demo_stall(root: Path, timeout: float = 180.0, messages: int = 3000, weeks: int = 12,
               offload: bool = True) -> DemoStall:
    """Open owner + member windows on the demo engines, then measure the GUI thread while the engines start and
    store the past chat (`start`), then while the owner builds every archive and the member downloads and imports
    all of them (`work`). `offload`: the engines' build, import and traffic generation in worker processes."""
    from PySide6.QtCore import QEventLoop, QSettings
    from gui.app import make_app
    from gui.demo import DemoNodes
    from gui.main_window import MainWindow
    app = make_app()
    owner = MainWindow(settings=QSettings(str(root / "o.ini"), QSettings.Format.IniFormat))
    member = MainWindow(settings=QSettings(str(root / "m.ini"), QSettings.Format.IniFormat))
    owner.show()
    member.show()
    meter = StallMeter()

    def spin(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    meter.start()
    spin(1500)
    idle = meter.stop()
    nodes = DemoNodes(root / "demo", weeks=weeks, messages=messages, settle=1.0, tick_seconds=0.3, offload=offload)
    state: dict = {}

    def work():
        nodes.start()
        nodes.add_owner()
        return nodes
    owner.ops.run(lambda ctx: work(), on_done=lambda n: state.setdefault("ready", n),
                  on_error=lambda e: state.setdefault("error", e))
    meter.start()
    t0, c0 = time.perf_counter(), time.process_time()
    while "ready" not in state and "error" not in state:
        spin(50)
    if "error" in state:
        raise state["error"]
    started, c1 = len(meter.delays), time.process_time()
    owner.attach_engine(nodes.control)
    cid = nodes.control_cfg.community_id
    owner.archive_now(cid)                      # through the window: the build runs on the engine's queue
    while not owner.control.build_status.text().startswith("Built"):
        spin(50)
    nodes.member_cfg.policy = "all"
    owner.ops.run(lambda ctx: (nodes.add_member(), nodes.run_engines()), on_done=lambda _: state.setdefault("m", 1))
    while "m" not in state:
        spin(50)
    member.attach_engine(nodes.member, history=nodes.history_of)
    total = len(nodes.control.community_state(cid).archives)
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        snap = member.adapter.snapshot
        if snap and sum(1 for a in snap[0].archives if a.imported) >= total:
            break
        spin(100)
    busy = meter.stop()
    cpu = (c1 - c0, time.process_time() - c1)
    start, work = meter.figures(0, started), meter.figures(started)
    secs = time.perf_counter() - t0
    msgs = nodes.history.count(cid)
    owner.close()
    member.close()
    nodes.stop()
    app.processEvents()
    return DemoStall(idle, busy, secs, total, msgs, start=start, work=work, cpu=cpu)


def spark_warm_stall(root: Path) -> tuple[float, float, StallFigures]:
    """Window shown, then Spark warms up in the background: (seconds to visible, warm-up seconds, GUI stall)."""
    from PySide6.QtCore import QEventLoop, QSettings
    from gui.app import make_app, warm_spark
    from gui.main_window import MainWindow
    t0 = time.perf_counter()
    app = make_app()
    w = MainWindow(settings=QSettings(str(root / "s.ini"), QSettings.Format.IniFormat))
    w.show()
    app.processEvents()
    visible = time.perf_counter() - t0
    meter = StallMeter()
    meter.start()
    done: list[float] = []
    w.spark_ready.connect(done.append)
    warm_spark(w)
    while not done:
        loop = QEventLoop()
        QTimer.singleShot(100, loop.quit)
        loop.exec()
        if time.perf_counter() - t0 > 600:
            raise TimeoutError("Spark did not warm up in 600 s")
    figures = meter.stop()
    w.close()
    return visible, done[0], figures


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "all"
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if what in ("cold", "all"):
        base = python_baseline()
        cold = cold_start()
        print(f"cold start: window painted after {min(cold):.2f} s (runs: {', '.join(f'{c:.2f}' for c in cold)}); "
              f"reference: bare python start {min(base):.2f} s")
    if what in ("spark",):
        with tempfile.TemporaryDirectory(prefix="archivist-spark-") as tmp:
            visible, warm, fig = spark_warm_stall(Path(tmp))
        print(f"window visible {visible:.2f} s after QApplication creation; Spark warm-up took {warm:.1f} s "
              "in the background")
        print(fig.line("GUI stall during the Spark warm-up"))
    if what in ("stall", "all"):
        with tempfile.TemporaryDirectory(prefix="archivist-stall-") as tmp:
            r = demo_stall(Path(tmp))
        print(r.idle.line("reference (idle window)"))
        print(r.start.line("start (engines, past chat stored)"))
        print(r.work.line(f"demo build+download+import ({r.archives} archives, {r.messages} messages)"))
        print(r.busy.line(f"whole run ({r.seconds:.1f} s)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
