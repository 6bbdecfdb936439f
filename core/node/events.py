"""The engine's event bus: events flow one way, engine -> subscribers (GUI adapter, CLI JSON printer).

Event names reuse status-go's signal names where status-go has one.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

# status-go names (protocol/communities + signal package)
CREATING_HISTORY_ARCHIVES = "community.creatingHistoryArchives"
HISTORY_ARCHIVES_CREATED = "community.historyArchivesCreated"
NO_HISTORY_ARCHIVES_CREATED = "community.noHistoryArchivesCreated"
HISTORY_ARCHIVES_SEEDING = "community.historyArchivesSeeding"
HISTORY_ARCHIVES_UNSEEDED = "community.historyArchivesUnseeded"
HISTORY_ARCHIVE_DOWNLOADED = "community.historyArchiveDownloaded"
DOWNLOADING_HISTORY_ARCHIVES_STARTED = "community.downloadingHistoryArchivesStarted"
IMPORTING_HISTORY_ARCHIVE_MESSAGES = "community.importingHistoryArchiveMessages"
DOWNLOADING_HISTORY_ARCHIVES_FINISHED = "community.downloadingHistoryArchivesFinished"
# ours (no status-go equivalent)
MAGNETLINK_RECEIVED = "archivist.magnetlinkReceived"
MAGNETLINK_REJECTED = "archivist.magnetlinkRejected"
WAITING = "archivist.waiting"              # data: {"reason": "...", "until": ts?} - every wait has a reason
PROGRESS = "archivist.progress"            # data: {"job": "...", "done": n, "total": m}
ERROR = "archivist.error"
# data: {"count": new ones, "total": n, "windows": [[from, to, n], ...]}: messages that arrived after their window
# was archived; they are kept in waku_messages (in no archive, never deleted by retention)
LATE_MESSAGES = "archivist.lateHistoryMessages"


@dataclass(frozen=True)
class Event:
    name: str
    community_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict:
        return {"event": self.name, "community_id": self.community_id, "at": self.at, **self.data}


class EventBus:
    """Thread-safe publish/subscribe. Subscribers run on the publishing thread and must not block
    (the GUI adapter re-emits as a queued Qt signal)."""

    def __init__(self) -> None:
        self._subs: list[Callable[[Event], None]] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Callable[[Event], None]) -> Callable[[], None]:
        with self._lock:
            self._subs.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subs:
                    self._subs.remove(fn)
        return unsubscribe

    def publish(self, name: str, community_id: str | None = None, **data: Any) -> Event:
        ev = Event(name, community_id, data)
        with self._lock:
            subs = list(self._subs)
        for fn in subs:
            fn(ev)
        return ev
