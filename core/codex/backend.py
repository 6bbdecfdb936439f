"""The Codex archive backend for both roles (seed 002; WIRE-FORMAT.md section 7).

Owner: encode each archive of the message store (optionally transformed, e.g. encrypted), check the node's quota,
upload each archive, build the CodexWakuMessageArchiveIndex, upload it, and hand back the index CID: that is the
link the engine announces in the type-43 message. It keeps its uploads alive against the node's block TTL.
Member: fetch the index by CID, diff it against the archive IDs it already has, fetch the chosen archives by CID
and verify them (CID, decode, metadata) before anything is imported.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Iterable, Mapping, Sequence

from core.archive import codec
from core.archive.build import ArchiveTransform, encode_windows
from core.archive.constants import PARTITION_SECONDS
from core.archive.errors import ArchiveError
from core.archive.folder import atomic_write
from core.archive.partition import missing_windows
from core.codex import index as cindex
from core.codex.cid import BLOCK_SIZE
from core.codex.client import CodexClient
from core.codex.errors import CodexError, CodexNotFound, CodexQuotaExceeded, CodexVerifyError
from core.codex.manifest import LAYOUT_2025, LAYOUT_2026, manifest_cid
from core.storage import waku_messages
from core.torrent.selection import Selection

DEFAULT_TTL = 30 * 86400
DEFAULT_REFRESH = 7 * 86400          # re-store well before the 30-day default TTL runs out
STATE_FILE = "codex-state.json"


def quota_need(sizes: Iterable[int]) -> int:
    """Bytes a node charges for datasets of these sizes: whole 64 KiB blocks plus one manifest block each."""
    return sum(-(-s // BLOCK_SIZE) * BLOCK_SIZE + BLOCK_SIZE for s in sizes)


def expected_cid(data: bytes) -> set[str]:
    """The CIDs a node may answer for an upload without metadata (the same under both layouts)."""
    return {str(manifest_cid(data, layout=LAYOUT_2025)), str(manifest_cid(data, layout=LAYOUT_2026))}


def checked_upload(client: CodexClient, data: bytes) -> str:
    cid = client.upload(data)
    if cid not in expected_cid(data):
        raise CodexVerifyError(f"the node returned CID {cid} for {len(data)} bytes, but they hash to "
                               f"{min(expected_cid(data))}", cid=cid)
    return cid


def checked_download(client: CodexClient, cid: str, *, network: bool = True) -> bytes:
    """Download and check that the bytes are what the CID names (uploads carry no filename or mimetype)."""
    data = client.download(cid, network=network)
    if not data or cid not in expected_cid(data):
        raise CodexVerifyError(f"{len(data)} bytes fetched for {cid} do not hash to that CID", cid=cid)
    return data


# ---- owner ----------------------------------------------------------------------------------------------------

@dataclass
class PublishResult:
    index_cid: str | None
    new_archive_ids: list[str]
    archives: list[dict]
    messages: int
    uploaded_bytes: int

    def to_json(self) -> dict:
        return self.__dict__.copy()


@dataclass
class KeepAliveReport:
    refreshed: list[str] = field(default_factory=list)   # still on the node; stored again to renew the TTL
    restored: list[str] = field(default_factory=list)    # gone from the node; uploaded again from the local copy
    lost: list[str] = field(default_factory=list)        # gone from the node and no local copy
    errors: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return self.__dict__.copy()


class CodexOwner:
    """A control node's Codex archives for one community, with crash-safe local state.

    Local state (`<state_dir>/<community_id>/codex/`): codex-state.json (entries, index CID, refresh times) and a
    copy of every uploaded blob under blobs/, so data that expired on the node can be stored again."""

    def __init__(self, client: CodexClient, state_dir: Path | str, community_id: str, *,
                 transform: ArchiveTransform | None = None, clock: Callable[[], float] = time.time,
                 refresh_interval: float = DEFAULT_REFRESH, interval: int = PARTITION_SECONDS):
        self.client = client
        self.community_id = community_id
        self.dir = Path(state_dir) / community_id / "codex"
        (self.dir / "blobs").mkdir(parents=True, exist_ok=True)
        self.transform = transform
        self.clock = clock
        self.refresh_interval = refresh_interval
        self.interval = interval
        self.entries: dict[str, cindex.CodexIndexEntry] = {}
        self.index_cid: str | None = None
        self.refreshed: dict[str, float] = {}
        self._load()

    def _load(self) -> None:
        p = self.dir / STATE_FILE
        if not p.exists():
            return
        st = json.loads(p.read_text())
        self.entries = {aid: cindex.CodexIndexEntry(e["from"], e["to"], tuple(bytes.fromhex(t) for t in e["topics"]),
                                                    e["cid"]) for aid, e in st["entries"].items()}
        self.index_cid = st.get("index_cid")
        self.refreshed = {k: float(v) for k, v in st.get("refreshed", {}).items()}

    def _save(self) -> None:
        st = {"entries": {aid: {"from": e.start, "to": e.end, "topics": [t.hex() for t in e.topics], "cid": e.cid}
                          for aid, e in sorted(self.entries.items())},
              "index_cid": self.index_cid, "refreshed": self.refreshed}
        atomic_write(self.dir / STATE_FILE, json.dumps(st, indent=1, sort_keys=True).encode())

    @property
    def last_end(self) -> int | None:
        return max((e.end for e in self.entries.values()), default=None)

    def _blob(self, cid: str) -> Path:
        return self.dir / "blobs" / cid

    def publish(self, db_path: Path | str, topics: Sequence[bytes], *, end: int | None = None,
                start: int | None = None) -> PublishResult:
        """Upload the archives missing since the last one (status-go's windows) and a new index."""
        end = int(self.clock()) if end is None else end
        con = waku_messages.connect(db_path, create=False)
        try:
            _, windows = missing_windows(self.last_end, lambda: waku_messages.oldest_timestamp(con, topics), end,
                                         start, self.interval)
            fetch = lambda lo, hi: waku_messages.query_messages(con, topics, lo, hi)  # noqa: E731
            produced = list(encode_windows(windows, topics, fetch, self.transform))
        finally:
            con.close()
        if not produced:
            return PublishResult(self.index_cid, [], [], 0, 0)
        return self.publish_archives([(a.start, a.end, a.topics, a.raw) for a, _ in produced],
                                     sum(n for _, n in produced))

    def publish_archives(self, archives: Sequence[tuple[int, int, Sequence[bytes], bytes]],
                         messages: int = 0) -> PublishResult:
        """Upload already-encoded (and transformed) archives, then the index covering all of them."""
        index_estimate = len(cindex.encode_index(self.entries)) + 200 * len(archives)
        need = quota_need([len(raw) for *_, raw in archives] + [index_estimate])
        space = self.client.space()
        if need > space.available:
            raise CodexQuotaExceeded(f"{CodexQuotaExceeded.user_message} Publishing needs {need} bytes but the node "
                                     f"has {space.available} of {space.quota_max_bytes} free; nothing was uploaded.")
        now = self.clock()
        new_ids, rows, uploaded = [], [], 0
        for lo, hi, topics, raw in archives:
            cid = checked_upload(self.client, raw)
            self._keep_copy(cid, raw)
            entry = cindex.CodexIndexEntry(lo, hi, tuple(topics), cid)
            aid = entry.archive_id
            self.entries[aid] = entry
            self.refreshed[cid] = now
            new_ids.append(aid)
            rows.append({"id": aid, "from": lo, "to": hi, "cid": cid, "bytes": len(raw)})
            uploaded += len(raw)
        raw_index = self.encoded_index()
        self.index_cid = checked_upload(self.client, raw_index)
        self._keep_copy(self.index_cid, raw_index)
        self.refreshed[self.index_cid] = now
        self._save()
        return PublishResult(self.index_cid, new_ids, rows, messages, uploaded + len(raw_index))

    def encoded_index(self) -> bytes:
        raw = cindex.encode_index(self.entries)
        return self.transform(raw) if self.transform is not None else raw

    def _keep_copy(self, cid: str, raw: bytes) -> None:
        if not self._blob(cid).exists():
            atomic_write(self._blob(cid), raw)

    def live_cids(self) -> list[str]:
        cids = [e.cid for e in self.entries.values()]
        return cids + ([self.index_cid] if self.index_cid else [])

    def keep_alive(self) -> KeepAliveReport:
        """Store again every CID not refreshed for `refresh_interval`; restore what the node lost.

        Storing identical bytes again gives the same CID and renews the blocks' TTL on the node."""
        rep = KeepAliveReport()
        now = self.clock()
        for cid in self.live_cids():
            on_node = self._present(cid, rep)
            if on_node and now - self.refreshed.get(cid, 0.0) < self.refresh_interval:
                continue
            blob = self._blob(cid)
            try:
                if blob.exists():
                    raw = blob.read_bytes()
                elif on_node:
                    raw = checked_download(self.client, cid, network=False)
                    self._keep_copy(cid, raw)
                else:
                    rep.lost.append(cid)
                    continue
                if checked_upload(self.client, raw) != cid:
                    raise CodexVerifyError(f"re-upload of {cid} gave another CID", cid=cid)
                (rep.refreshed if on_node else rep.restored).append(cid)
                self.refreshed[cid] = now
            except CodexError as e:
                rep.errors.append(e.to_json())
        self._save()
        return rep

    def _present(self, cid: str, rep: KeepAliveReport) -> bool:
        try:
            return self.client.exists(cid)
        except CodexError as e:
            rep.errors.append(e.to_json())
            return True  # unknown: do not claim it lost


# ---- member ---------------------------------------------------------------------------------------------------

def choose(entries: Mapping[str, cindex.CodexIndexEntry], selection: Selection) -> list[str]:
    """Archive IDs chosen by a selection, oldest first, whole windows (the torrent path's rule: Selection.choose)."""
    return selection.choose(entries)


@dataclass
class FetchResult:
    index_cid: str
    index_archives: int
    chosen: list[str]
    archives: dict[str, codec.DecodedArchive] = field(default_factory=dict)
    failed: dict[str, CodexError | ArchiveError] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def messages(self) -> list[codec.ArchiveMessage]:
        return [m for aid in self.chosen if aid in self.archives for m in self.archives[aid].messages]

    @property
    def state(self) -> str:
        """"complete", "partial" (some archives failed) or "failed" (none fetched)."""
        if not self.failed:
            return "complete"
        return "partial" if self.archives else "failed"

    @property
    def summary(self) -> str:
        """One sentence for the user; names the first failure's reason."""
        text = f"{len(self.archives)} of {len(self.chosen)} archives fetched from Codex"
        if self.failed:
            first = next(iter(self.failed.values()))
            text += f"; {len(self.failed)} failed ({first.code}: {describe_failure(first)})"
        return text + "."

    def to_json(self) -> dict:
        return {"state": self.state, "summary": self.summary,
                "index_cid": self.index_cid, "index_archives": self.index_archives, "chosen": self.chosen,
                "fetched": {a: len(d.messages) for a, d in self.archives.items()},
                "failed": {a: {"code": e.code, "message": str(e)} for a, e in self.failed.items()}}


class CodexMember:
    """A member fetching a community's archives from Codex by the announced index CID."""

    def __init__(self, client: CodexClient, *, untransform: Callable[[bytes], bytes] | None = None,
                 network: bool = True):
        self.client = client
        self.untransform = untransform
        self.network = network

    def fetch_index(self, index_cid: str) -> dict[str, cindex.CodexIndexEntry]:
        raw = checked_download(self.client, index_cid, network=self.network)
        return verify_index_blob(raw, self.untransform, cid=index_cid)

    def fetch_archive(self, aid: str, entry: cindex.CodexIndexEntry) -> codec.DecodedArchive:
        raw = checked_download(self.client, entry.cid, network=self.network)
        return verify_archive_blob(aid, entry, raw, self.untransform)

    def sync(self, index_cid: str, local_ids: Collection[str] = (),
             selection: Selection = Selection("all")) -> FetchResult:
        """Fetch the index, diff it against `local_ids` (a set difference), fetch and verify the chosen ones.

        An archive that fails is recorded in `failed` with its reason; the others are still fetched."""
        entries = self.fetch_index(index_cid)
        have = set(local_ids)
        chosen = [aid for aid in choose(entries, selection) if aid not in have]
        res = FetchResult(index_cid, len(entries), chosen)
        for aid in chosen:
            try:
                res.archives[aid] = self.fetch_archive(aid, entries[aid])
            except (CodexError, ArchiveError) as e:
                res.failed[aid] = e
        return res


# ---- decode / verify (also used by the inspector) --------------------------------------------------------------

def verify_index_blob(raw: bytes, untransform: Callable[[bytes], bytes] | None = None, *,
                      cid: str | None = None) -> dict[str, cindex.CodexIndexEntry]:
    """Decode an index blob (undoing encryption if given) and refuse it if any invariant fails."""
    try:
        entries = cindex.decode_index(untransform(raw) if untransform else raw)
    except (ArchiveError, ValueError) as e:
        raise CodexVerifyError(f"Codex index {cid or ''} does not decode: {e}", cid=cid) from None
    problems = cindex.check_index(entries)
    if problems:
        raise CodexVerifyError(f"Codex index {cid or ''} is invalid: " + "; ".join(p.message for p in problems[:5]),
                               cid=cid)
    return entries


def verify_archive_blob(aid: str, entry: cindex.CodexIndexEntry, raw: bytes,
                        untransform: Callable[[bytes], bytes] | None = None) -> codec.DecodedArchive:
    try:
        return cindex.decode_checked_archive(aid, entry, untransform(raw) if untransform else raw)
    except (ArchiveError, ValueError) as e:
        raise CodexVerifyError(f"archive {aid} ({entry.cid}): {e}", cid=entry.cid) from None


# ---- the link ----------------------------------------------------------------------------------------------------

def link_kind(link: str) -> str | None:
    """"magnet" or "codex" (a bare manifest CID): how readers tell the two backends apart; None if neither."""
    from core.archive.torrent import is_magnet_link
    if is_magnet_link(link):
        return "magnet"
    link = link.strip()
    from core.codex.cid import is_cid
    return "codex" if is_cid(link) else None


def announcement(community_key, index_cid: str, clock_ms: int) -> bytes:
    """The type-43 ProtocolMessage (signed with the community key) carrying the index CID as archive_link;
    the engine puts it into the payload-v1 envelope on the community's link channel(s)."""
    from core.status.application_metadata import build_archive_link_message
    if link_kind(index_cid) != "codex":
        raise ValueError(f"{index_cid!r} is not a Codex index CID")
    return build_archive_link_message(community_key, clock_ms, index_cid)


def describe_failure(err: Exception) -> str:
    """One sentence for the user about a failed Codex step."""
    if isinstance(err, CodexNotFound):
        return f"Not found on Codex: {err.cid or ''}. The owner's node may have dropped it or be offline."
    return str(err)
