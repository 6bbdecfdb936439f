"""Member side: which archive-link messages to act on (WIRE-FORMAT.md section 4).

A link is accepted only if the community key signed it, its clock is at least the stored one and at most
`max_future_ms` ahead of ours (else one far-future link would raise the stored clock and block every later
link), and it differs from the last link processed. Every rejection is logged with a reason and counted in the
state database.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

from core.status.application_metadata import ArchiveLinkMessage, open_archive_link_envelope
from core.status.errors import SignatureError, StatusError
from core.storage.archive_state import ArchiveStateDB
from core.waku.message import DEFAULT_MAX_FUTURE_S

log = logging.getLogger(__name__)

FORGED = "not-community-key"
OLDER_CLOCK = "older-clock"
FUTURE_CLOCK = "future-clock"
DEFAULT_MAX_FUTURE_MS = int(DEFAULT_MAX_FUTURE_S * 1000)  # the Waku edge's timestamp skew (nwaku: 20 s)
REPLAYED = "replayed"
MALFORMED = "malformed"


@dataclass(frozen=True)
class LinkDecision:
    accepted: bool
    reason: str
    message: ArchiveLinkMessage | None = None
    detail: str = ""             # the reason in words, with the numbers ("clock 41 < stored 52")
    stored_clock: int | None = None   # older-clock: the clock of the link the member holds (the event carries it)


class LinkGate:
    def __init__(self, db: ArchiveStateDB, community_id: str, *,
                 now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
                 max_future_ms: int = DEFAULT_MAX_FUTURE_MS):
        self.db = db
        self.community_id = community_id
        self.now_ms, self.max_future_ms = now_ms, max_future_ms  # link clocks are Unix milliseconds

    def _reject(self, reason: str, detail: str, msg: ArchiveLinkMessage | None = None,
                stored_clock: int | None = None) -> LinkDecision:
        log.info("ignored archive link for %s: %s (%s)", self.community_id, reason, detail)
        self.db.count_rejection(self.community_id, reason)
        return LinkDecision(False, reason, msg, detail, stored_clock)

    def consider_envelope(self, envelope: bytes, chat_id: str) -> LinkDecision:
        """A payload-v1 envelope received on `chat_id` (the -magnetlinks or -memberUpdate channel)."""
        try:
            msg = open_archive_link_envelope(envelope, chat_id, self.community_id)
        except SignatureError as e:
            return self._reject(FORGED, str(e))  # signed by another key, or not signed at all
        except StatusError as e:
            return self._reject(MALFORMED, str(e))
        return self.consider(msg)

    def consider(self, msg: ArchiveLinkMessage) -> LinkDecision:
        info = self.db.archive_info(self.community_id)
        if msg.clock < info.magnetlink_clock:
            return self._reject(OLDER_CLOCK, f"clock {msg.clock} < stored {info.magnetlink_clock}", msg,
                                info.magnetlink_clock)
        ahead = msg.clock - self.now_ms()
        if ahead > self.max_future_ms:
            return self._reject(FUTURE_CLOCK, f"clock {msg.clock} is {ahead / 1000:.0f} s in the future "
                                              f"(limit {self.max_future_ms / 1000:.0f} s)", msg)
        pending = self.db.pending_link(self.community_id)
        if msg.link == info.last_magnetlink_uri or (pending and pending[0] == msg.link):
            return self._reject(REPLAYED, "link already processed", msg)
        self.db.set_magnetlink_clock(self.community_id, msg.clock)
        return LinkDecision(True, "accepted", msg)
