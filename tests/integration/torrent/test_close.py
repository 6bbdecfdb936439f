"""Closing a torrent session from two threads at once, and with its alert thread stuck (the CI failure of stop 26:
Quit stopped the node on a thread of its own, gave up waiting after 2 s, and a second stop on the main thread
raced the first one into `AttributeError: 'NoneType' object has no attribute 'join'`). Real libtorrent sessions on
127.0.0.1."""
from __future__ import annotations

import threading

from core.torrent.service import TorrentService
from core.torrent.settings import TorrentSettings


def _service(tmp_path) -> TorrentService:
    return TorrentService(TorrentSettings.loopback(), tmp_path / "state").start()


def test_two_threads_close_one_session_and_both_return_cleanly(tmp_path):
    svc = _service(tmp_path)
    gate = threading.Event()
    entered = threading.Event()
    # the alert thread is held in a command, so the first close() is still waiting for its resume save when the
    # second one starts: both are inside close() at once
    svc.call(lambda: (entered.set(), gate.wait(30)))
    assert entered.wait(30)
    errors: list[BaseException] = []
    first_in = threading.Event()

    def close():
        first_in.set()
        try:
            svc.close(timeout=30)
        except BaseException as e:  # noqa: BLE001 - any error at all is the failure under test
            errors.append(e)

    closers = [threading.Thread(target=close) for _ in range(2)]
    for t in closers:
        t.start()
    assert first_in.wait(30)
    gate.set()
    for t in closers:
        t.join(60)
    assert not any(t.is_alive() for t in closers)
    assert errors == []
    assert svc._thread is None and svc._ses is None            # closed once, completely
    assert not (tmp_path / "state" / "running.marker").exists()  # the clean-shutdown marker went with it


def test_a_stuck_alert_thread_does_not_keep_close_waiting(tmp_path, caplog, monkeypatch):
    crashed: list = []
    monkeypatch.setattr(threading, "excepthook", crashed.append)
    svc = _service(tmp_path)
    release = threading.Event()
    entered = threading.Event()
    svc.call(lambda: (entered.set(), release.wait(60)))       # an owner stuck in a callback
    assert entered.wait(30)
    ran: list = []
    queued = svc.call(lambda: ran.append("after close"))      # waits behind the stuck callback
    alerts = svc._thread
    try:
        svc.close(timeout=0.5)
        assert svc._thread is None and svc._ses is None
        assert "saving resume data at shutdown failed: TimeoutError" in caplog.text
        assert "did not stop within" in caplog.text
        svc.close(timeout=0.5)                                  # again: a no-op, not an AttributeError
    finally:
        release.set()
    alerts.join(30)       # the callback returns after the close: the thread ends without touching the closed session
    assert not alerts.is_alive() and crashed == []
    assert ran == [] and "torrent service stopped" in str(queued.exception(0))   # nothing ran on the closed session


def test_a_command_after_close_fails_at_once(tmp_path):
    svc = _service(tmp_path)
    svc.close()
    fut = svc.call(lambda: "never runs")
    assert fut.done()
    exc = fut.exception(0)
    assert isinstance(exc, RuntimeError) and "torrent service stopped" in str(exc)
