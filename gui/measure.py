"""GUI responsiveness figures: cold start (process start -> window painted) and the GUI-thread stall while the
demo builds, downloads and imports.  `python -m gui.measure cold|stall|spark|fork|all` prints them."""
from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QElapsedTimer, QObject, Qt, QTimer


LATE_MS = 16.0          # a tick this late missed a frame
BUSY_MS = 5.0           # CPU of the process's other threads during a late tick that counts as holding the GIL


@dataclass
class StallFigures:
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    late: int | None = None       # ticks later than LATE_MS
    late_busy: int | None = None  # of those, ticks during which the process's other threads ran >= BUSY_MS
    worst: tuple = ()             # the 3 latest ticks: (late ms, other threads' CPU ms meanwhile)

    def line(self, label: str) -> str:
        text = (f"{label}: {self.samples} ticks, GUI stall p50 {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, "
                f"max {self.max_ms:.1f} ms")
        if self.late is not None:
            text += (f"; {self.late} ticks > {LATE_MS:.0f} ms late, in {self.late_busy} of them the window "
                     f"process's other threads ran >= {BUSY_MS:.0f} ms (GIL), in the rest it got no CPU; worst: "
                     + ", ".join(f"{a:.0f} ms (other threads {b:.0f} ms)" for a, b in self.worst))
        return text


class StallMeter(QObject):
    """A precise timer on the GUI thread; each tick records how late it fired (= how long the thread stalled),
    and how much CPU the process's other threads used meanwhile (`busy`, ms): a late tick with the GUI thread idle
    and other threads running was waiting for the GIL; one with no CPU used at all was waiting for a core (the
    machine's other load)."""

    def __init__(self, interval_ms: int = 5, parent: QObject | None = None):
        super().__init__(parent)
        self.interval = interval_ms
        self.delays: list[float] = []
        self.busy: list[float] = []
        self._cpu = (0.0, 0.0)
        self._clock = QElapsedTimer()
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._last = 0

    def start(self) -> None:
        self.delays.clear()
        self.busy.clear()
        self._cpu = (time.process_time(), time.thread_time())
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
        cpu = (time.process_time(), time.thread_time())
        self.busy.append(max(0.0, ((cpu[0] - self._cpu[0]) - (cpu[1] - self._cpu[1])) * 1000))
        self._cpu = cpu

    def figures(self, since: int = 0, until: int | None = None) -> StallFigures:
        """Figures of ticks number `since` to `until` (a phase of a run; default: all)."""
        d = sorted(self.delays[since:until]) or [0.0]
        ticks = list(zip(self.delays[since:until], self.busy[since:until]))
        late = [b for x, b in ticks if x > LATE_MS]
        return StallFigures(len(ticks), statistics.median(d), d[min(len(d) - 1, int(len(d) * 0.99))], d[-1],
                            len(late), sum(1 for b in late if b >= BUSY_MS), tuple(sorted(ticks, reverse=True)[:3]))


def cold_start(runs: int = 3) -> list[float]:
    """Seconds from `python` process start to a painted main window (offscreen unless a display is set)."""
    code = ("import sys, time; from gui.app import make_app; from gui.main_window import MainWindow; "
            "from PySide6.QtCore import QSettings, QTimer; "
            "a = make_app(); w = MainWindow(settings=QSettings(sys.argv[1], "
            "QSettings.Format.IniFormat)); w.show(); a.processEvents(); w.repaint(); "
            "print('VISIBLE', flush=True); QTimer.singleShot(0, a.quit); a.exec()")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    out = []
    with tempfile.TemporaryDirectory(prefix="archivist-cold-start-") as tmp:
        for i in range(runs):
            t0 = time.perf_counter()
            p = subprocess.Popen([sys.executable, "-c", code, os.path.join(tmp, f"{i}.ini")], stdout=subprocess.PIPE,
                                 text=True, env=env, cwd=str(Path(__file__).resolve().parent.parent))
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
               offload: bool = True, idle_ms: int = 1500, settle: float = 1.0,
               tick_seconds: float = 0.3) -> DemoStall:
    """Open owner + member windows on the demo engines, then measure the GUI thread while the engines start and
    store the past chat (`start`), then while the owner builds every archive and the member downloads and imports
    all of them (`work`). `offload`: the engines' build, import and traffic generation in worker processes.
    `idle_ms` (the idle reference), `settle` (the member's wait for newer links) and `tick_seconds` (the engines'
    timer) are waits: `make test`'s quick run passes shorter ones (tests/bench/test_gui_stall_bench.py)."""
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
    spin(idle_ms)
    idle = meter.stop()
    nodes = DemoNodes(root / "demo", weeks=weeks, messages=messages, settle=settle, tick_seconds=tick_seconds,
                      offload=offload)
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


@contextlib.contextmanager
def bare_window(prefix: str):
    """(app, window): a main window with no node and settings in a temporary folder, shown and painted."""
    from PySide6.QtCore import QSettings
    from gui.app import make_app
    from gui.main_window import MainWindow
    app = make_app()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        w = MainWindow(settings=QSettings(os.path.join(tmp, "window.ini"), QSettings.Format.IniFormat))
        w.show()
        app.processEvents()
        yield app, w


def _idle_child() -> None:
    """`python -c` entry of idle_window_process: an idle main window whose GUI thread is metered until stdin
    closes; then its figures as one JSON line."""
    import json
    from PySide6.QtCore import QSocketNotifier
    with bare_window("archivist-idle-") as (app, w):
        meter = StallMeter()
        meter.start()
        print("READY", flush=True)

        def closed() -> None:
            if os.read(0, 4096):
                return
            note.setEnabled(False)
            f = meter.stop()
            print(json.dumps([f.samples, f.p50_ms, f.p99_ms, f.max_ms, f.late, f.late_busy, f.worst]), flush=True)
            app.quit()
        note = QSocketNotifier(0, QSocketNotifier.Type.Read)
        note.activated.connect(closed)
        app.exec()
        w.close()


class IdleWindowProcess:
    """A reference measured at the same time as the window under test: another process with an idle main window
    and its own StallMeter. Its late ticks are what the machine's other load alone does to a window (its CPU
    share), so the difference is what the measured window's own process adds (the GIL held by its threads)."""

    def __init__(self):
        env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
        self.proc = subprocess.Popen([sys.executable, "-c", "from gui.measure import _idle_child; _idle_child()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=str(Path(__file__).resolve().parent.parent))
        line = self.proc.stdout.readline()         # type: ignore[union-attr]
        if not line.startswith("READY"):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"the idle reference window did not start: {line!r}")

    def stop(self) -> StallFigures:
        import json
        self.proc.stdin.close()                    # type: ignore[union-attr]
        out = self.proc.stdout.read()              # type: ignore[union-attr]
        self.proc.wait(30)
        *head, worst = json.loads(out.strip().splitlines()[-1])
        return StallFigures(*head, tuple(map(tuple, worst)))


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


def fork_gil_wait(ballast_mib: int = 1500, runs: int = 5) -> dict[str, float]:
    """How long another Python thread of a window process waits while the process starts a child: `Popen` with
    `preexec_fn` (as pyspark launches the JVM: fork, under the GIL, copying the page tables) against plain
    `Popen` (vfork) and `start_new_session=True`. `ballast_mib` of touched memory stands for a window holding a
    Spark driver. Returns the worst wait (ms) of a 1 ms sleep loop for each way."""
    import signal
    import threading
    ballast = bytearray(ballast_mib << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    late: list[float] = []
    stop = threading.Event()

    def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            late.append(now - last - 0.001)
            last = now
    t = threading.Thread(target=ticker, daemon=True)
    t.start()
    ways = {"preexec_fn (fork)": {"preexec_fn": lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)},
            "plain (vfork)": {}, "start_new_session (vfork)": {"start_new_session": True}}
    out = {}
    for name, kw in ways.items():
        time.sleep(0.2)
        late.clear()
        for _ in range(runs):
            subprocess.Popen(["true"], stdin=subprocess.PIPE, **kw).wait()
            time.sleep(0.05)
        out[name] = max(late) * 1000
    stop.set()
    t.join()
    del ballast
    return out


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "all"
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if what in ("cold", "all"):
        base = python_baseline()
        cold = cold_start()
        print(f"cold start: window painted after {min(cold):.2f} s (runs: {', '.join(f'{c:.2f}' for c in cold)}); "
              f"reference: bare python start {min(base):.2f} s")
    if what in ("spark",):
        ref = IdleWindowProcess()
        try:
            with tempfile.TemporaryDirectory(prefix="archivist-spark-") as tmp:
                visible, warm, fig = spark_warm_stall(Path(tmp))
        finally:
            idle = ref.stop()
        print(f"window visible {visible:.2f} s after QApplication creation; Spark warm-up took {warm:.1f} s "
              f"in the background (load average {os.getloadavg()[0]:.1f})")
        print(fig.line("GUI stall during the Spark warm-up"))
        print(idle.line("reference: an idle window in another process, at the same time"))
    if what in ("fork",):
        with bare_window("archivist-fork-") as (_app, w):
            waits = fork_gil_wait()
            w.close()
        print("another thread's worst wait while the window process starts a child (1.5 GB resident): "
              + ", ".join(f"{k} {v:.1f} ms" for k, v in waits.items()))
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
