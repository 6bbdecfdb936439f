"""11/WAKU2-RELAY: validation at the edge and the glue between GossipSub and our message handling.

Validators reject malformed, oversize and empty messages (and messages whose timestamp is missing, negative or
more than the allowed skew in the future) before they are stored, delivered or forwarded; every rejection is
counted by reason and logged at debug with its full text.
"""
from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import Callable

from core.waku.message import DEFAULT_MAX_FUTURE_S, NS, InvalidMessage, WakuMessage, decode_message, \
    validate_message
from core.varint import DecodeError


@dataclass(frozen=True)
class ReceivedMessage:
    pubsub_topic: str
    message: WakuMessage
    hash: bytes


log = logging.getLogger(__name__)


class RelayValidator:
    def __init__(self, max_message_size: int, *, max_future_s: float = DEFAULT_MAX_FUTURE_S,
                 clock: Callable[[], int] = time.time_ns):
        self.max_message_size = max_message_size
        self.max_future_ns = int(max_future_s * NS)
        self.clock = clock  # Unix ns
        self.rejected: collections.Counter[str] = collections.Counter()
        self._last: tuple[bytes, WakuMessage] | None = None   # the last message accepted, for decoded()
        self._vouched: tuple[bytes, WakuMessage] | None = None   # our own edge's message, checked there (vouch)

    def vouch(self, data: bytes, m: WakuMessage) -> None:
        """`data`, the encoding of `m`, was just checked by our own edge (WakuNode.publish: local publish and
        lightpush, with this validator's limits and clock, and more): the next check() of the same bytes accepts
        it without decoding and validating it again (pubsub validates every message it is handed, ours too)."""
        self._vouched = (data, m)

    def check(self, data: bytes, source: object = None) -> WakuMessage | None:
        """The decoded message if it may be relayed, else None (and the reason is counted). An oversize message
        is logged at info with its size, the limit and `source` (the forwarding peer): it is the one refusal
        a well-behaved peer can trigger (another network's larger limit), and it costs the sender > 1 MiB each."""
        if len(data) > self.max_message_size:
            self.rejected["oversize"] += 1
            log.info("relay: refused a message from %s: message is %d bytes (max %d)", source or "?", len(data),
                     self.max_message_size)
            return None
        vouched, self._vouched = self._vouched, None
        if vouched is not None and vouched[0] == data:
            self._last = vouched
            return vouched[1]
        try:
            m = decode_message(data)
            validate_message(m, max_size=self.max_message_size, encoded_size=len(data), now_ns=self.clock(),
                             max_future_ns=self.max_future_ns)
            self._last = (data, m)
            return m
        except DecodeError:
            self.rejected["malformed"] += 1
        except InvalidMessage as e:
            self.rejected[e.reason] += 1
            log.debug("relay: refused a message: %s", e)
        return None

    def decoded(self, data: bytes) -> WakuMessage:
        """decode_message(data), without decoding again the message just validated (pubsub validates a message
        and then delivers it, one after the other)."""
        last = self._last
        if last is not None and last[0] == data:
            return last[1]
        return decode_message(data)

    def gossipsub_validator(self, forwarder, pubsub_msg) -> bool:
        return self.check(pubsub_msg.data, forwarder) is not None
