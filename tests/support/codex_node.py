"""A local Codex test node: a real HTTP server on 127.0.0.1 implementing the REST subset the backend uses.

It behaves like nim-codex where CODEX.md documents it (status codes, the 74-byte 404 body, `{"<cid>": bool}`
from exists, 204 on DELETE, 500 on an empty upload, 422 on an unknown mimetype) and computes real CIDs with
core.codex.cid. Blocks live on disk. Network fetches go to the peers given with add_peer(), over their REST API,
and are verified against the CID before being stored. Faults to simulate: `stall_after` (stream N bytes then
stall), `truncate_after` (send N bytes of a longer Content-Length, then close), an unknown CID on the network
(blocks like a real node's 3000 retries, until `network_give_up` s or stop()), a small `quota_max_bytes`,
and stop() (the node disappears; open connections are cut).
"""
from __future__ import annotations

import http.client
import json
import mimetypes
import re
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from core.codex.cid import BLOCK_SIZE, CidError, parse_cid, split_blocks, tree_cid
from core.codex.manifest import LAYOUT_2025, LAYOUT_2026, Manifest, ManifestError, manifest_from_json

NOT_FOUND_BODY = b"The requested CID could not be retrieved (Block not found in local store)."
GIB = 1 << 30


class CodexTestNode:
    def __init__(self, root: Path | str, *, base_path: str = "/api/codex/v1", quota_max_bytes: int = 20 * GIB,
                 layout: str = LAYOUT_2025, block_ttl: float = 30 * 86400, clock: Callable[[], float] = time.time,
                 network_give_up: float = 60.0):
        self.root = Path(root)
        (self.root / "blocks").mkdir(parents=True, exist_ok=True)
        (self.root / "datasets").mkdir(parents=True, exist_ok=True)
        self.base_path = base_path.rstrip("/")
        self.quota_max_bytes = quota_max_bytes
        self.layout = layout
        self.block_ttl = block_ttl
        self.clock = clock
        self.network_give_up = network_give_up
        self.stall_after: int | None = None
        self.truncate_after: int | None = None
        self.fault_cids: set[str] | None = None  # stall/truncate only these CIDs (None: all)
        self.peers: list[CodexTestNode] = []
        self.requests: list[tuple[str, str, dict]] = []  # (method, path, headers) for assertions
        self.server_errors: list[BaseException] = []     # unexpected handler exceptions
        self._seen = threading.Condition()
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self.peer_id = "16Uiu2HAm" + self.root.name[-20:].ljust(20, "x")

    # ---- lifecycle --------------------------------------------------------------------------------------------
    def start(self) -> "CodexTestNode":
        node = self

        class Handler(_Handler):
            pass
        Handler.node = node
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.node = self
        self._server.daemon_threads = False
        self._server.block_on_close = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="codex-test-node",
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        """The port it listened on (kept after stop(), so peers then meet a refused connection)."""
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    def stop(self) -> None:
        """The node disappears: stop accepting, cut open connections, wait for every handler thread."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        self._thread.join(timeout=10)
        self._server = self._thread = None

    def record(self, method: str, path: str, headers: dict) -> None:
        with self._seen:
            self.requests.append((method, path, headers))
            self._seen.notify_all()

    def wait_for_request(self, suffix: str, timeout: float = 10.0) -> bool:
        """Block until a request whose path ends with `suffix` has arrived (no polling)."""
        with self._seen:
            return self._seen.wait_for(lambda: any(p.endswith(suffix) for _, p, _ in self.requests), timeout)

    def add_peer(self, other: "CodexTestNode") -> None:
        self.peers.append(other)

    # ---- storage ----------------------------------------------------------------------------------------------
    def _dataset_path(self, cid: str) -> Path:
        return self.root / "datasets" / f"{cid}.json"

    def _load(self, cid: str) -> dict | None:
        p = self._dataset_path(cid)
        if not p.exists():
            return None
        ds = json.loads(p.read_text())
        if self.clock() >= ds["expiry"]:
            self._delete(cid)
            return None
        return ds

    def _all(self) -> dict[str, dict]:
        return {p.stem: json.loads(p.read_text()) for p in (self.root / "datasets").glob("*.json")}

    def used_bytes(self) -> tuple[int, int]:
        """(quota bytes used, blocks): data blocks counted once, plus one manifest block per dataset."""
        with self._lock:
            datasets = self._all()
            blocks = {b for ds in datasets.values() for b in ds["blocks"]}
            manifests = sum(len(ds["manifest"]) // 2 for ds in datasets.values())
            return len(blocks) * BLOCK_SIZE + manifests, len(blocks) + len(datasets)

    def store(self, data: bytes, filename: str | None = None, mimetype: str | None = None) -> str:
        """What POST /data does. Raises QuotaError when the blocks would not fit."""
        m = Manifest(tree_cid(data), len(data), BLOCK_SIZE, filename, mimetype)
        cid, raw = str(m.cid(self.layout)), m.encode(self.layout)
        blocks = split_blocks(data)
        import hashlib
        digests = [hashlib.sha256(b).hexdigest() for b in blocks]
        with self._lock:
            used, _ = self.used_bytes()
            new = {d for d in digests if not (self.root / "blocks" / d).exists()}
            need = len(new) * BLOCK_SIZE + (0 if self._dataset_path(cid).exists() else len(raw))
            if used + need > self.quota_max_bytes:
                raise QuotaError(f"Quota usage would exceed the limit. Used: {used}, reserved: 0, "
                                 f"limit: {self.quota_max_bytes}")
            for d, b in zip(digests, blocks):
                bp = self.root / "blocks" / d
                if not bp.exists():
                    bp.write_bytes(b)
            ds = {"manifest": raw.hex(), "json": m.to_json(), "blocks": digests,
                  "expiry": self.clock() + self.block_ttl}
            self._dataset_path(cid).write_text(json.dumps(ds))
        return cid

    def read(self, cid: str) -> bytes | None:
        with self._lock:
            ds = self._load(cid)
            if ds is None:
                return None
            data = b"".join((self.root / "blocks" / d).read_bytes() for d in ds["blocks"])
        return data[:ds["json"]["datasetSize"]]

    def _delete(self, cid: str) -> None:
        with self._lock:
            p = self._dataset_path(cid)
            if not p.exists():
                return
            ds = json.loads(p.read_text())
            p.unlink()
            still = {b for other in self._all().values() for b in other["blocks"]}
            for d in ds["blocks"]:
                if d not in still:
                    (self.root / "blocks" / d).unlink(missing_ok=True)

    def forget_all(self) -> None:
        """Drop every dataset (as if the TTL had passed for all of them)."""
        for cid in list(self._all()):
            self._delete(cid)

    # ---- network ----------------------------------------------------------------------------------------------
    def fetch_from_peers(self, cid: str) -> dict | None:
        """Fetch a dataset from a peer over its REST API, verify it against the CID, store it."""
        for peer in list(self.peers):
            try:
                manifest = manifest_from_json(json.loads(_peer_get(peer, f"/data/{cid}/network/manifest")))
                if str(manifest.cid(LAYOUT_2025)) != cid and str(manifest.cid(LAYOUT_2026)) != cid:
                    continue
                data = _peer_get(peer, f"/data/{cid}")
                if tree_cid(data) != manifest.tree_cid or len(data) != manifest.dataset_size:
                    continue
            except (OSError, http.client.HTTPException, ValueError, ManifestError, LookupError):
                continue
            try:
                self.store(data, manifest.filename, manifest.mimetype)
            except QuotaError:
                return None
            return self._load(cid)
        return None

    def wait_for_network(self, cid: str) -> dict | None:
        """A real node retries for a very long time on CIDs nobody provides: block until give-up or stop()."""
        ds = self._load(cid) or self.fetch_from_peers(cid)
        if ds is None:
            self._stopping.wait(self.network_give_up)
        return ds


class QuotaError(Exception):
    pass


class _Server(ThreadingHTTPServer):
    node: CodexTestNode

    def handle_error(self, request, client_address):
        """A client that hangs up (timeouts, stop()) is normal here; anything else is kept for the test to see."""
        import sys
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, OSError)):
            self.node.server_errors.append(exc)


def _peer_get(peer: CodexTestNode, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", peer.port, timeout=10)
    try:
        conn.request("GET", peer.base_path + path)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise LookupError(f"peer answered {resp.status}")
        return body
    finally:
        conn.close()


_ROUTE = re.compile(r"^/data/([^/]+)(/network(?:/stream|/manifest)?|/exists)?$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "nim-presto/0.0.3"
    node: CodexTestNode

    def setup(self):
        super().setup()
        with self.node._lock:
            self.node._conns.add(self.connection)

    def finish(self):
        with self.node._lock:
            self.node._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, status: int, body: bytes = b"", ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and status != 204:
            self.wfile.write(body)

    def _json(self, obj) -> None:
        self._send(200, json.dumps(obj).encode(), "application/json")

    def _not_found(self) -> None:
        self._send(404, NOT_FOUND_BODY, "text/html; charset=utf-8")

    def _route(self) -> tuple[str, str | None, str | None] | None:
        path = urllib.parse.urlsplit(self.path).path
        if not path.startswith(self.node.base_path + "/"):
            return None
        rest = path[len(self.node.base_path):]
        m = _ROUTE.match(rest)
        if m:
            return "data", m.group(1), m.group(2) or ""
        return rest, None, None

    def _cid_ok(self, cid: str) -> bool:
        try:
            parse_cid(cid)
            return True
        except CidError:
            self._send(400, b"Incorrect Cid")
            return False

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self):
        self.node.record("POST", self.path, dict(self.headers))
        r = self._route()
        if r is None:
            return self._send(404, b"Not found")
        kind, cid, sub = r
        if kind == "/data":
            return self._upload()
        if kind == "data" and sub == "/network" and self._cid_ok(cid):
            ds = self.node.wait_for_network(cid)
            if ds is None:
                return self._not_found()
            return self._json({"cid": cid, "manifest": ds["json"]})
        if kind != "data" or sub != "/network":
            self._send(404, b"Not found")

    def _upload(self):
        body = self._read_body()
        ctype = self.headers.get("Content-Type")
        if ctype is not None and ctype.strip() and mimetypes.guess_extension(ctype.split(";")[0].strip()) is None:
            return self._send(422, f"The MIME type '{ctype}' is not valid.".encode())
        mimetype = ctype.strip() if ctype and ctype.strip() else None
        m = re.search(r'filename="([^"]*)"', self.headers.get("Content-Disposition", ""))
        filename = m.group(1) if m else None
        if not body:
            return self._send(500, b"Data set is empty")
        try:
            cid = self.node.store(body, filename, mimetype)
        except QuotaError as e:
            return self._send(500, str(e).encode())
        self._send(200, cid.encode())

    def do_GET(self):
        self.node.record("GET", self.path, dict(self.headers))
        r = self._route()
        if r is None:
            return self._send(404, b"Not found")
        kind, cid, sub = r
        node = self.node
        if kind == "data":
            if not self._cid_ok(cid):
                return
            if sub == "/exists":
                return self._json({cid: node._load(cid) is not None})
            if sub == "":
                data = node.read(cid)
                return self._not_found() if data is None else self._stream(data, cid)
            if sub == "/network/manifest":
                ds = node._load(cid) or node.fetch_from_peers(cid)
                return self._not_found() if ds is None else self._json({"cid": cid, "manifest": ds["json"]})
            if sub == "/network/stream":
                ds = node.wait_for_network(cid)
                data = node.read(cid) if ds is not None else None
                return self._not_found() if data is None else self._stream(data, cid)
            return self._send(404, b"Not found")
        if kind == "/space":
            used, blocks = node.used_bytes()
            return self._json({"totalBlocks": blocks, "quotaMaxBytes": node.quota_max_bytes,
                               "quotaUsedBytes": used, "quotaReservedBytes": 0})
        if kind == "/debug/info":
            return self._json({"id": node.peer_id, "addrs": [], "repo": str(node.root), "spr": "spr:test",
                               "announceAddresses": [], "table": {"localNode": {}, "nodes": []},
                               "codex": {"version": "test-node", "revision": "0"}})
        if kind == "/peerid":
            return self._send(200, node.peer_id.encode())
        if kind == "/spr":
            return self._send(200, b"spr:test")
        self._send(404, b"Not found")

    def _stream(self, data: bytes, cid: str) -> None:
        node = self.node
        faulty = node.fault_cids is None or cid in node.fault_cids
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if faulty and node.truncate_after is not None:
            self.wfile.write(data[:node.truncate_after])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if faulty and node.stall_after is not None:
            self.wfile.write(data[:node.stall_after])
            self.wfile.flush()
            node._stopping.wait(node.network_give_up)
            self.close_connection = True
            return
        for i in range(0, len(data), BLOCK_SIZE):
            self.wfile.write(data[i:i + BLOCK_SIZE])

    def do_DELETE(self):
        self.node.record("DELETE", self.path, dict(self.headers))
        r = self._route()
        if r is None or r[0] != "data" or r[2] != "":
            return self._send(404, b"Not found")
        if self._cid_ok(r[1]):
            self.node._delete(r[1])
            self._send(204)


class FakeClock:
    """A settable clock shared by a test node and a backend (TTL and refresh tests never wait)."""

    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class NodeFactory:
    """Starts test nodes on demand and stops every one of them at teardown."""

    def __init__(self, tmp: Path):
        self.tmp = Path(tmp)
        self.nodes: list[CodexTestNode] = []

    def __call__(self, name: str = "node", **kw) -> CodexTestNode:
        node = CodexTestNode(self.tmp / f"{name}-{len(self.nodes)}", **kw).start()
        self.nodes.append(node)
        return node

    def close(self) -> None:
        for n in self.nodes:
            n.stop()
        errors = [e for n in self.nodes for e in n.server_errors]
        assert not errors, f"test node handler errors: {errors!r}"
