"""The message an archive holds: status-go's archived WakuMessage. It lives at the bottom layer because the control
node's message store (waku_messages.py) reads and writes its rows as these, and the archive codec encodes them."""
from __future__ import annotations

from dataclasses import dataclass

from core.pb import communities_archive_pb2 as pb


@dataclass(frozen=True, slots=True)
class ArchiveMessage:
    """status-go's archived WakuMessage (timestamp in seconds, 4-byte topic, decrypted payload)."""

    sig: bytes
    timestamp: int
    topic: bytes
    payload: bytes
    padding: bytes = b""
    hash: bytes = b""
    third_party_id: str = ""

    @property
    def chunk_size(self) -> int:
        """What status-go counts against the 30 MB cap."""
        return len(self.payload) + len(self.sig)

    def to_pb(self) -> pb.WakuMessage:
        return pb.WakuMessage(sig=self.sig, timestamp=self.timestamp, topic=self.topic, payload=self.payload,
                              padding=self.padding, hash=self.hash, thirdPartyId=self.third_party_id)

    @classmethod
    def from_pb(cls, m: pb.WakuMessage) -> "ArchiveMessage":
        return cls(m.sig, m.timestamp, m.topic, m.payload, m.padding, m.hash, m.thirdPartyId)
