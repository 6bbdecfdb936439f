"""11/WAKU2-RELAY: validation at the edge and the glue between GossipSub and our message handling.

Validators reject malformed, oversize and empty messages (and messages without a timestamp) before they are
stored, delivered or forwarded; every rejection is counted by reason.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass

from core.waku.message import InvalidMessage, WakuMessage, decode_message, validate_message
from core.varint import DecodeError


@dataclass(frozen=True)
class ReceivedMessage:
    pubsub_topic: str
    message: WakuMessage
    hash: bytes


class RelayValidator:
    def __init__(self, max_message_size: int):
        self.max_message_size = max_message_size
        self.rejected: collections.Counter[str] = collections.Counter()

    def check(self, data: bytes) -> WakuMessage | None:
        """The decoded message if it may be relayed, else None (and the reason is counted)."""
        if len(data) > self.max_message_size:
            self.rejected["oversize"] += 1
            return None
        try:
            m = decode_message(data)
            validate_message(m, max_size=self.max_message_size, encoded_size=len(data))
            return m
        except DecodeError:
            self.rejected["malformed"] += 1
        except InvalidMessage as e:
            self.rejected[str(e).split(" (")[0].split(" is ")[0]] += 1
        return None

    def gossipsub_validator(self, _forwarder, pubsub_msg) -> bool:
        return self.check(pubsub_msg.data) is not None
