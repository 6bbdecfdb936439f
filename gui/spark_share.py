"""The process's one SparkOwner (core.pipeline.session.default_owner) as windows share it.

A window that needs Spark (its warm-up, its node's Spark build) holds the owner; closing the window lets go. The
last window to let go closes the owner, unless its SparkSession was already running when the first window took it:
a session that something else started (a script that embeds the window, the pipeline tests' session-wide one) is
theirs to stop. New [spark] settings need a new owner whoever holds it (one JVM per process): `release(force=True)`.
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_holders: dict = {}        # SparkOwner -> ids of the windows that hold it
_foreign: set = set()      # owners whose session ran before any window held them


def hold(window, settings=None, owner=None):
    """The process's owner (created with `settings` if there is none), held by `window` (its `spark_owner`).
    `owner`: hold that one instead (tests: an owner of their own, whatever else runs in the process)."""
    if owner is None:
        from core.pipeline.session import default_owner
        owner = default_owner(settings)
    with _lock:
        if owner not in _holders:
            _holders[owner] = set()
            if owner.spark_if_started is not None:
                _foreign.add(owner)
        _holders[owner].add(id(window))
    window.spark_owner = owner
    return owner


def holders(owner) -> int:
    """How many windows hold `owner`."""
    with _lock:
        return len(_holders.get(owner, ()))


def release(window, timeout: float = 60.0, force: bool = False) -> None:
    """`window` lets go of its owner; the last holder closes it (see above); `force` closes it regardless."""
    owner, window.spark_owner = window.spark_owner, None
    if owner is None:
        return
    with _lock:
        held = _holders.get(owner, set())
        held.discard(id(window))
        if force:
            _holders.pop(owner, None)
            _foreign.discard(owner)
        elif held:
            return
        else:
            _holders.pop(owner, None)
            if owner in _foreign:
                _foreign.discard(owner)
                return
    owner.close(timeout)
