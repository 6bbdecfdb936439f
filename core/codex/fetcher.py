"""Plugs the Codex backend into the member engine (core/node/member.py) in place of the torrent service.

`CodexFetcher.fetch(link, data_dir, selection, community_id=...)` returns a job with the torrent FetchJob's
surface (`done`, `wait`, `cancel`, `snapshot()`, `entries`, `chosen`). The job fetches and checks the chosen
archives by CID, keeps each fetched blob under `<data_dir>/<community>/codex-blobs/` (so a retry fetches only
what is missing), then writes `<data_dir>/<community>/data` holding the chosen archives back to back, with
IndexEntry offsets into it, which is exactly what the reference hydrator reads. Blobs are kept as fetched
(encrypted ones stay encrypted): the hydrator's `unwrap` opens them, as for torrent data.
`LinkFetcher` sends magnet links to the torrent service and CIDs here (status-go: one backend per community;
the link says which).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from core.archive.codec import IndexEntry
from core.archive.constants import DATA_FILE
from core.archive.errors import ArchiveError
from core.archive.folder import atomic_write
from core.codex.backend import CodexMember, checked_download, choose, link_kind, verify_archive_blob
from core.codex.client import CodexClient
from core.codex.errors import CodexError

BLOB_DIR = "codex-blobs"


class CodexFetchJob:
    def __init__(self, member: CodexMember, link: str, data_dir: Path, selection, community_id: str | None):
        self.member, self.link, self.selection = member, link, selection
        self.community_id = community_id or "unknown"
        self.folder = Path(data_dir) / self.community_id
        self.entries: dict[str, IndexEntry] = {}
        self.chosen: list[str] = []
        self.state, self.code, self.message = "running", None, "fetching the Codex index"
        self.fetched = self.reused = self.done_bytes = 0
        self.done = threading.Event()
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"codex-fetch-{self.community_id[:10]}", daemon=True)

    def start(self) -> "CodexFetchJob":
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    def cancel(self) -> None:
        """Stops before the next archive (an HTTP request in flight ends by its own timeout)."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._fetch()
        except (CodexError, ArchiveError) as e:
            self.state, self.code, self.message = "failed", e.code, str(e)
        except Exception as e:  # noqa: BLE001 - a job must always finish with a state
            self.state, self.code, self.message = "failed", "codex-error", f"{type(e).__name__}: {e}"
        finally:
            self.done.set()

    def _fetch(self) -> None:
        codex_entries = self.member.fetch_index(self.link)
        chosen = choose(codex_entries, self.selection)
        blobs = self.folder / BLOB_DIR
        blobs.mkdir(parents=True, exist_ok=True)
        parts: list[tuple[str, bytes]] = []
        for i, aid in enumerate(chosen):
            if self._cancel.is_set():
                self.state, self.message = "cancelled", "cancelled"
                return
            e = codex_entries[aid]
            self.message = f"fetching archive {i + 1} of {len(chosen)} from Codex"
            path = blobs / e.cid
            if path.exists():
                raw = path.read_bytes()
                self.reused += 1
            else:
                raw = checked_download(self.member.client, e.cid, network=self.member.network)
                if self.member.untransform is not None:       # check content when we can open it
                    verify_archive_blob(aid, e, raw, self.member.untransform)
                atomic_write(path, raw)
                self.fetched += 1
            self.done_bytes += len(raw)
            parts.append((aid, raw))
        offset, entries = 0, {}
        for aid, raw in parts:
            e = codex_entries[aid]
            entries[aid] = IndexEntry(e.start, e.end, e.topics, offset, len(raw), 0)
            offset += len(raw)
        atomic_write(self.folder / DATA_FILE, b"".join(raw for _, raw in parts))
        self.entries, self.chosen = entries, chosen
        self.state, self.message = "complete", f"{len(chosen)} archives fetched from Codex"

    def snapshot(self) -> dict:
        return {"community_id": self.community_id, "link": self.link, "backend": "codex", "state": self.state,
                "code": self.code, "message": self.message, "selection": self.selection.to_json(),
                "archives": len(self.chosen), "archives_total": len(self.entries), "fetched": self.fetched,
                "reused": self.reused, "done_bytes": self.done_bytes,
                "progress": 1.0 if self.state == "complete" else 0.0}


class CodexFetcher:
    """What MemberNode calls `fetcher`, for Codex links."""

    def __init__(self, client: CodexClient, *, untransform: Callable[[bytes], bytes] | None = None,
                 network: bool = True):
        self.member = CodexMember(client, untransform=untransform, network=network)
        self.jobs: list[CodexFetchJob] = []

    def fetch(self, link: str, data_dir: Path | str, selection=None, *, community_id: str | None = None,
              peers=()) -> CodexFetchJob:
        from core.torrent.selection import Selection
        job = CodexFetchJob(self.member, link.strip(), Path(data_dir), selection or Selection(), community_id)
        self.jobs.append(job)
        return job.start()

    def close(self, timeout: float = 30.0) -> None:
        for j in self.jobs:
            j.cancel()
            j.join(timeout)


class LinkFetcher:
    """Dispatch on the link: `magnet:?` to the torrent service, a bare CID to Codex."""

    def __init__(self, torrents=None, codex: CodexFetcher | None = None):
        self.torrents, self.codex = torrents, codex

    def fetch(self, link: str, data_dir, selection=None, *, community_id=None, peers=()):
        kind = link_kind(link)
        target = self.codex if kind == "codex" else self.torrents if kind == "magnet" else None
        if target is None:
            raise ValueError(f"no backend for archive link {link[:60]!r} ({kind or 'unknown kind'})")
        return target.fetch(link, data_dir, selection, community_id=community_id, peers=peers)
