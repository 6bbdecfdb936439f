"""Pluggable unwrapping of an archived WakuMessage payload into application fields.

The Status layer (core/status: ProtocolMessage -> ApplicationMetadataMessage -> ChatMessage) is written by another
part of the project. Until it is present, `default_unwrap` returns None and the hydrate job stores the raw payload
only. A replacement is any picklable function `payload -> Unwrapped | None` (it runs in the executors) that never
raises for bad input (it returns None instead).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True, slots=True)
class Unwrapped:
    chat_id: str | None = None
    clock: int | None = None
    message_id: str | None = None
    message_type: int | None = None
    text: str | None = None


Unwrapper = Callable[[bytes], Optional[Unwrapped]]

# (module, function) pairs tried in order; the function takes the payload and returns an object or dict with any
# of Unwrapped's fields. Looked up lazily, in the executor.
_CANDIDATES = (
    ("core.status.chat_message", "unwrap_archived_payload"),
    ("core.status.application_metadata", "unwrap_archived_payload"),
)
_resolved: list = []


def _resolve():
    if not _resolved:
        fn = None
        for mod, name in _CANDIDATES:
            try:
                fn = getattr(importlib.import_module(mod), name, None)
            except ImportError:
                fn = None
            if fn is not None:
                break
        _resolved.append(fn)
    return _resolved[0]


def _coerce(obj) -> Unwrapped | None:
    if obj is None or isinstance(obj, Unwrapped):
        return obj
    get = obj.get if isinstance(obj, dict) else (lambda k, d=None: getattr(obj, k, d))
    return Unwrapped(get("chat_id"), get("clock"), get("message_id"), get("message_type"), get("text"))


def default_unwrap(payload: bytes) -> Unwrapped | None:
    """Use core.status's unwrapper when it exists; None (raw payload only) otherwise or on any decode failure."""
    fn = _resolve()
    if fn is None:
        return None
    try:
        return _coerce(fn(payload))
    except Exception:  # noqa: BLE001 - outside data: an undecodable payload is stored raw
        return None


def no_unwrap(payload: bytes) -> Unwrapped | None:
    return None
