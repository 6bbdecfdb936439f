"""A thin client for the Codex / Logos Storage node REST API (CODEX.md table), on httpx.

Uploads carry no Content-Type and no filename (so the CID depends only on the bytes and is the same under the
2025 and 2026 manifest layouts). Downloads stream with read timeouts and an overall deadline, and compare the
bytes received with Content-Length, because a node's stream can end early without an error.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable

import httpx

from core.archive.constants import MAX_INDEX_BYTES
from core.archive.index_check import MAX_ARCHIVE_BYTES
from core.codex import DEFAULT_API  # noqa: F401 - re-exported: the client's default
from core.codex.cid import CidError, parse_cid
from core.codex.errors import (CodexBadResponse, CodexError, CodexNotFound, CodexQuotaExceeded, CodexTimeout,
                               CodexTruncated, CodexUnreachable)
from core.codex.manifest import Manifest, ManifestError, manifest_from_json
from core.httpclient import http_client

MAX_DOWNLOAD = max(MAX_ARCHIVE_BYTES, MAX_INDEX_BYTES)   # an archive or an index, never more: refuse absurd bodies


@dataclass(frozen=True, slots=True)
class Space:
    total_blocks: int
    quota_max_bytes: int
    quota_used_bytes: int
    quota_reserved_bytes: int

    @property
    def available(self) -> int:
        return self.quota_max_bytes - self.quota_used_bytes - self.quota_reserved_bytes


class CodexClient:
    def __init__(self, base_url: str | None = DEFAULT_API, *, connect_timeout: float = 5.0, read_timeout: float = 30.0,
                 download_deadline: float = 300.0, transport: httpx.BaseTransport | None = None,
                 monotonic: Callable[[], float] = time.monotonic):
        # no URL (a community's config without codex_api, the Inspector without one in Settings): the local node's
        # default address, the one rule for every caller
        self.base_url = (base_url or DEFAULT_API).rstrip("/")
        self.download_deadline = download_deadline
        self._monotonic = monotonic
        timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout)
        self._http = http_client(timeout=timeout, transport=transport, trust_env=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "CodexClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- plumbing ---------------------------------------------------------------------------------------------
    def _request(self, method: str, path: str, cid: str | None = None, **kw) -> httpx.Response:
        try:
            resp = self._http.request(method, self.base_url + path, **kw)
        except httpx.TimeoutException as e:
            raise CodexTimeout(f"{CodexTimeout.user_message} ({method} {path}: {type(e).__name__})", cid=cid) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.NetworkError) as e:
            raise CodexUnreachable(f"{CodexUnreachable.user_message} ({self.base_url}: {e})", cid=cid) from None
        self._check(resp, cid)
        return resp

    def _check(self, resp: httpx.Response, cid: str | None) -> None:
        if resp.status_code < 400:
            return
        body = resp.read()[:500].decode("utf-8", "replace").strip()
        status = resp.status_code
        if status == 404:
            raise CodexNotFound(f"{CodexNotFound.user_message} {cid or ''} ({body})".replace("  ", " "),
                                cid=cid, status=status)
        if status == 413 or (status >= 500 and "quota" in body.lower()):
            raise CodexQuotaExceeded(f"{CodexQuotaExceeded.user_message} ({body})", cid=cid, status=status)
        raise CodexError(f"The Codex node answered HTTP {status}: {body or resp.reason_phrase}", cid=cid,
                         status=status)

    def _json(self, resp: httpx.Response, cid: str | None = None):
        try:
            return resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            raise CodexBadResponse(f"{CodexBadResponse.user_message} (not JSON: {resp.text[:80]!r})", cid=cid) from None

    @staticmethod
    def _cid_path(cid: str) -> str:
        try:
            return str(parse_cid(cid))
        except CidError as e:
            raise CodexError(f"{cid!r} is not a Codex manifest CID: {e}", cid=cid) from None

    # ---- API --------------------------------------------------------------------------------------------------
    def upload(self, data: bytes) -> str:
        """POST /data with the raw bytes and no metadata; returns the manifest CID."""
        if not data:
            raise ValueError("a Codex node refuses empty uploads (HTTP 500)")
        resp = self._request("POST", "/data", content=data)
        text = resp.text.strip()
        try:
            return str(parse_cid(text))
        except CidError as e:
            raise CodexBadResponse(f"upload answered {text[:80]!r}, not a manifest CID ({e})") from None

    def download(self, cid: str, *, network: bool = False, max_bytes: int = MAX_DOWNLOAD) -> bytes:
        """GET /data/{cid} (local store only) or /data/{cid}/network/stream (fetch from peers)."""
        cid = self._cid_path(cid)
        path = f"/data/{cid}/network/stream" if network else f"/data/{cid}"
        started = self._monotonic()
        try:
            # identity: the byte count must be comparable with Content-Length, and CIDs hash the raw bytes
            with self._http.stream("GET", self.base_url + path, headers={"Accept-Encoding": "identity"}) as resp:
                self._check(resp, cid)
                expected = resp.headers.get("content-length")
                expected = int(expected) if expected and expected.isdigit() else None
                if expected is not None and expected > max_bytes:
                    raise CodexBadResponse(f"content of {expected} bytes exceeds the {max_bytes}-byte limit", cid=cid)
                chunks, got = [], 0
                try:
                    for chunk in resp.iter_raw():
                        chunks.append(chunk)
                        got += len(chunk)
                        if got > max_bytes:
                            raise CodexBadResponse(f"content exceeds the {max_bytes}-byte limit", cid=cid)
                        if self._monotonic() - started > self.download_deadline:
                            raise CodexTimeout(f"{CodexTimeout.user_message} (download of {cid} exceeded "
                                               f"{self.download_deadline:g} s after {got} bytes)", cid=cid)
                except httpx.RemoteProtocolError:
                    pass  # connection closed early: reported below with the byte counts
                if expected is not None and got != expected:
                    raise CodexTruncated(f"{CodexTruncated.user_message} ({got} of {expected} bytes of {cid})",
                                         cid=cid)
                return b"".join(chunks)
        except httpx.TimeoutException as e:
            raise CodexTimeout(f"{CodexTimeout.user_message} (GET {path}: {type(e).__name__})", cid=cid) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.NetworkError) as e:
            # RemoteProtocolError here: the node went away before answering (mid-body it is a truncation, above)
            raise CodexUnreachable(f"{CodexUnreachable.user_message} ({self.base_url}: {e})", cid=cid) from None

    def fetch(self, cid: str) -> Manifest:
        """POST /data/{cid}/network: start a background fetch from peers; returns the manifest."""
        cid = self._cid_path(cid)
        return self._manifest(self._json(self._request("POST", f"/data/{cid}/network", cid), cid), cid)

    def manifest(self, cid: str) -> Manifest:
        cid = self._cid_path(cid)
        return self._manifest(self._json(self._request("GET", f"/data/{cid}/network/manifest", cid), cid), cid)

    @staticmethod
    def _manifest(obj, cid: str) -> Manifest:
        try:
            return manifest_from_json(obj)
        except ManifestError as e:
            raise CodexBadResponse(f"{CodexBadResponse.user_message} (manifest: {e})", cid=cid) from None

    def exists(self, cid: str) -> bool:
        """GET /data/{cid}/exists -> {"<cid>": bool} (older OpenAPI files say {"has": bool}; both accepted)."""
        cid = self._cid_path(cid)
        obj = self._json(self._request("GET", f"/data/{cid}/exists", cid), cid)
        if isinstance(obj, dict):
            val = obj.get(cid, obj.get("has"))
            if isinstance(val, bool):
                return val
        raise CodexBadResponse(f"{CodexBadResponse.user_message} (exists: {str(obj)[:80]})", cid=cid)

    def delete(self, cid: str) -> None:
        cid = self._cid_path(cid)
        self._request("DELETE", f"/data/{cid}", cid)

    def space(self) -> Space:
        obj = self._json(self._request("GET", "/space"))
        try:
            return Space(int(obj["totalBlocks"]), int(obj["quotaMaxBytes"]), int(obj["quotaUsedBytes"]),
                         int(obj.get("quotaReservedBytes", 0)))
        except (KeyError, TypeError, ValueError):
            raise CodexBadResponse(f"{CodexBadResponse.user_message} (space: {str(obj)[:80]})") from None

    def debug_info(self) -> dict:
        obj = self._json(self._request("GET", "/debug/info"))
        if not isinstance(obj, dict):
            raise CodexBadResponse(f"{CodexBadResponse.user_message} (debug/info is not an object)")
        return obj
