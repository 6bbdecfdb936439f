"""stop_process: SIGTERM first, SIGKILL for a child that ignores it, nothing for one that has exited."""
import signal
import subprocess
import sys

from core.process import stop_process

# prints once its SIGTERM handler is in place (or ignored), then waits to be stopped
CHILD = ("import signal, sys, threading\n"
         "signal.signal(signal.SIGTERM, {handler})\n"
         "print('ready', flush=True)\n"
         "threading.Event().wait()\n")


def _child(handler: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(handler=handler)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_a_child_that_stops_on_sigterm_is_not_killed():
    proc = _child("lambda *_: sys.exit(3)")
    assert stop_process(proc, grace=60) == 3
    proc.stdout.close()


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace():
    proc = _child("signal.SIG_IGN")
    assert stop_process(proc, grace=0.2) == -signal.SIGKILL
    proc.stdout.close()


def test_a_child_that_has_exited_gets_no_signal():
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    proc.wait()
    assert stop_process(proc) == 7
