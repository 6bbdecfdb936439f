"""Plain-value snapshots of what the engine knows, for the GUI and the CLI (no behaviour here)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Role(str, Enum):
    CONTROL = "control"
    MEMBER = "member"


class ArchiveSupport(str, Enum):
    """One state machine for the global switch and the per-community switch (Status Desktop #18004/#18005)."""

    ON = "on"                       # both switches on: archives are built and seeded
    OFF = "off"                     # community switch off
    DISABLED_GLOBALLY = "disabled-globally"   # community wants it, global switch is off: effective state is off


class SeedingState(str, Enum):
    NOT_SEEDING = "not-seeding"
    STARTING = "starting"           # libtorrent checks the files; members are turned away until that is done
    SEEDING_WITH_PEERS = "seeding-with-peers"
    SEEDING_IDLE = "seeding-idle"
    NOT_REACHABLE = "not-reachable"
    ERROR = "error"


def seeding_state(seed_state: str | None) -> SeedingState:
    """What the GUI and the CLI show for the state of a seed (core.torrent.seed.STATES); anything else is not
    seeding. A seed still starting is not shown as idle: members that connect now are turned away."""
    from core.torrent import seed
    return {seed.STARTING: SeedingState.STARTING, seed.IDLE: SeedingState.SEEDING_IDLE,
            seed.SEEDING_WITH_PEERS: SeedingState.SEEDING_WITH_PEERS, seed.NOT_REACHABLE: SeedingState.NOT_REACHABLE,
            seed.ERROR: SeedingState.ERROR}.get(seed_state, SeedingState.NOT_SEEDING)


class DownloadPolicy(str, Enum):
    """What a member downloads: the codes of core.torrent.selection.MODES (checked by tests/gui/test_policy_words)."""
    ALL = "all"
    LATEST = "latest"
    RANGE = "range"


@dataclass(frozen=True)
class ArchiveInfo:
    archive_id: str
    start: int
    end: int
    size: int
    messages: int | None = None
    local: bool = False            # member: downloaded; control: built
    imported: bool = False
    state: str = ""                # e.g. "wanted", "downloading 40%", "importing", "parked: key missing"


@dataclass(frozen=True)
class DownloadProgress:
    """The running download of a member (the torrent job's snapshot): bytes of the chosen archives, the rate over
    the last seconds and the time left (None while unknown), and per archive (archive ID, bytes done, size)."""
    bytes_done: int
    bytes_wanted: int
    rate: float | None = None                # bytes per second
    eta: float | None = None                 # seconds left
    state: str = ""                          # the job's state: metadata, downloading, complete, failed...
    archives: tuple[tuple[str, int, int], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CommunityState:
    community_id: str
    name: str
    role: Role
    support: ArchiveSupport = ArchiveSupport.OFF
    seeding: SeedingState = SeedingState.NOT_SEEDING
    peers: int = 0
    uploaded: int = 0
    magnet: str | None = None
    next_archive_at: int | None = None
    waiting_reason: str | None = None        # every wait has a reason on screen
    archives: tuple[ArchiveInfo, ...] = field(default_factory=tuple)
    policy: DownloadPolicy = DownloadPolicy.ALL
    range_start: int | None = None
    range_end: int | None = None
    broken: str | None = None                # control: "code: reason" when the archive folder cannot be trusted
    late_messages: int = 0                   # control: messages kept because their week was already archived
    encrypted: bool = False                  # member: archives are encrypted with the community's group key
    key_wait: str | None = None              # member: why archives wait for the community's key (None: no wait)
    parked: tuple[tuple[str, str], ...] = field(default_factory=tuple)   # member: (archive ID, reason) not imported
    download: DownloadProgress | None = None  # member: the running download, None when none runs

    @property
    def archive_span(self) -> tuple[int, int] | None:
        """(earliest archive start, latest archive end) of the archives the node knows, or None."""
        if not self.archives:
            return None
        return min(a.start for a in self.archives), max(a.end for a in self.archives)
