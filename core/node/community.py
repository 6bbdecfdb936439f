"""One community as a node sees it: identity, channels, and where its files live."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.status import topics as status_topics
from core.status.identity import CommunityIdentity
from core.waku.store_db import DEFAULT_RETENTION_S

RETENTION_SECONDS = 30 * 24 * 3600   # control: archived messages older than this leave the store
STORE_LOOKBACK_S = DEFAULT_RETENTION_S   # how far back a Waku store node keeps messages: the most any catch-up asks
GRACE_SECONDS = 3600          # a window is built only once it closed this long ago: late messages still make it in
SETTLE_SECONDS = 20.0         # member: a new archive link waits this long for a newer one before it is fetched


@dataclass
class CommunityConfig:
    community_id: str
    name: str = ""
    role: str = "member"                       # "control" | "member"
    channel_chat_ids: list[str] = field(default_factory=list)
    key_file: str | None = None                # control node: the community private key (mode 0600)
    archive_support: bool = True               # control: build/seed; member: fetch
    policy: str = "all"                        # member default: all | latest | range
    range_start: int | None = None
    range_end: int | None = None
    announce_on: tuple[str, ...] = ("magnetlinks", "memberUpdate")
    trackers: tuple[str, ...] = ()
    encrypted: bool = False                    # token-gated: archives are hash-ratchet encrypted
    backend: str = "torrent"                   # "torrent" | "codex": one per community, as in status-go
    codex_api: str | None = None               # Codex REST base URL (…/api/codex/v1 or …/api/storage/v1)

    @property
    def topics(self) -> list[bytes]:
        return [status_topics.status_topic(c) for c in self.channel_chat_ids]

    @property
    def link_chat_ids(self) -> tuple[str, str]:
        return status_topics.archive_link_chat_ids(self.community_id)

    def announce_chat_ids(self) -> tuple[str, ...]:
        mag, upd = self.link_chat_ids
        return tuple(c for c, k in ((mag, "magnetlinks"), (upd, "memberUpdate")) if k in self.announce_on)

    def identity(self, passphrase: str | None = None) -> CommunityIdentity:
        if not self.key_file:
            raise ValueError(f"community {self.community_id} has no key file: only its control node can announce")
        return CommunityIdentity.load(self.key_file, passphrase)


@dataclass(frozen=True)
class NodePaths:
    root: Path

    @property
    def state_db(self) -> Path:
        return self.root / "state.sqlite"

    @property
    def messages_db(self) -> Path:
        return self.root / "messages.sqlite"

    @property
    def history_db(self) -> Path:
        return self.root / "history.sqlite"

    @property
    def group_keys(self) -> Path:
        """Encrypted communities' hash-ratchet keys (core.status.archive_encryption.GroupKeyStore, mode 0600)."""
        from core.status.archive_encryption import GroupKeyStore
        return self.root / GroupKeyStore.FILE_NAME

    @property
    def archive_dir(self) -> Path:
        return self.root / "archivedata"

    @property
    def torrent_dir(self) -> Path:
        return self.root / "torrents"

    @property
    def torrent_state(self) -> Path:
        return self.root / "torrent-state"

    def ensure(self) -> "NodePaths":
        for p in (self.root, self.archive_dir, self.torrent_dir, self.torrent_state):
            p.mkdir(parents=True, exist_ok=True)
        return self
