"""NwakuRestBackend: the same interface as EmbeddedWakuBackend, backed by an external nwaku's REST API.

nwaku's relay cache is poll-and-clear and keeps only the latest 50 messages per topic, so a poll that returns
a full cache (or the first poll) is followed by a store v3 query over the window since the last message seen;
messages are de-duplicated by their deterministic hash. nwaku itself cannot run on this machine: the tests
use a local HTTP server that implements the documented endpoints (tests/integration/waku/nwaku_stub.py).
"""
from __future__ import annotations

import base64
import collections
import logging
import threading
import time
import urllib.parse
from typing import Callable, Iterator, Sequence

import httpx

from core.hextext import from_hex
from core.httpclient import http_client
from core.waku.backend import MessageCallback, Subscription
from core.waku.errors import BAD_ADDRESS, WakuError, WakuPeerError
from core.waku.message import WakuMessage
from core.waku.relay import ReceivedMessage

log = logging.getLogger(__name__)
RELAY_CACHE_SIZE = 50  # nwaku keeps this many messages per topic for GET /relay/v1/messages
SEEN_LIMIT = 100_000


class RestError(WakuError):
    """nwaku's REST API could not be reached or answered with an error."""


def message_to_json(m: WakuMessage) -> dict:
    d = {"payload": base64.b64encode(m.payload).decode(), "contentTopic": m.content_topic,
         "timestamp": m.timestamp or 0, "version": m.version or 0}
    if m.meta is not None:
        d["meta"] = base64.b64encode(m.meta).decode()
    if m.ephemeral is not None:
        d["ephemeral"] = m.ephemeral
    return d


def message_from_json(d: dict) -> WakuMessage:
    """Decode nwaku's JSON message; raises ValueError on anything malformed."""
    if not isinstance(d, dict) or not isinstance(d.get("contentTopic"), str):
        raise ValueError("message without contentTopic")
    try:
        payload = base64.b64decode(d.get("payload") or "", validate=True)
        meta = base64.b64decode(d["meta"], validate=True) if d.get("meta") else None
    except (ValueError, TypeError) as e:
        raise ValueError(f"bad base64: {e}") from e
    ts, ver = d.get("timestamp"), d.get("version")
    if ts is not None and not isinstance(ts, int) or ver is not None and not isinstance(ver, int):
        raise ValueError("timestamp/version must be integers")
    return WakuMessage(payload, d["contentTopic"], version=ver, timestamp=ts, meta=meta,
                       ephemeral=d.get("ephemeral") if isinstance(d.get("ephemeral"), bool) else None)


def hash_from_json(s: str) -> bytes:
    """nwaku prints hashes as 0x-hex (older versions: base64)."""
    if s.startswith("0x"):
        return from_hex(s)
    return base64.b64decode(s)


class NwakuRestBackend:
    def __init__(self, base_url: str = "http://127.0.0.1:8645", *, poll_interval: float | None = 0.5,
                 store_peer: str | None = None, timeout: float = 10.0, clock: Callable[[], int] = time.time_ns):
        self.base_url = base_url.rstrip("/")
        self.poll_interval = poll_interval
        self.store_peer = store_peer
        self.clock = clock
        self.http = http_client(base_url=self.base_url, timeout=timeout)
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        self._seen: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        self._last_ts: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.gap_fills = 0

    def _req(self, method: str, path: str, **kw):
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as e:
            raise RestError(f"{method} {path}: {e}") from e
        if r.status_code >= 400:
            raise RestError(f"{method} {path}: HTTP {r.status_code} {r.text[:200]}")
        return r

    # --- lifecycle ---
    def start(self) -> None:
        self._req("GET", "/health")
        if self.poll_interval:
            self._thread = threading.Thread(target=self._poll_loop, name="nwaku-poll", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.http.close()

    @property
    def listen_addrs(self) -> list[str]:
        info = self._req("GET", "/debug/v1/info").json()
        return list(info.get("listenAddresses", []))

    def add_peer(self, multiaddr: str) -> str:
        """Has nwaku dial `multiaddr`, which ends in /p2p/<peer id> as the embedded node's must; returns that id.
        Raises WakuPeerError ("bad address") for one without it, before asking nwaku."""
        _, sep, peer = multiaddr.rpartition("/p2p/")
        if not sep or not peer or "/" in peer:
            raise WakuPeerError(multiaddr, "dial", BAD_ADDRESS, "the address does not end in /p2p/<peer id>")
        self._req("POST", "/admin/v1/peers", json=[multiaddr])
        return peer

    # --- relay ---
    def subscribe(self, pubsub_topic: str, content_topics: Sequence[str], callback: MessageCallback) -> Subscription:
        self._req("POST", "/relay/v1/subscriptions", json=[pubsub_topic])
        sub = Subscription(pubsub_topic, content_topics, callback, self)
        with self._lock:
            self._subs.append(sub)
            self._last_ts.setdefault(pubsub_topic, self.clock())
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def publish(self, pubsub_topic: str, message: WakuMessage) -> bytes:
        from core.waku.message import validate_message
        validate_message(message)
        self._req("POST", f"/relay/v1/messages/{urllib.parse.quote(pubsub_topic, safe='')}",
                  json=message_to_json(message))
        return message.hash(pubsub_topic)

    def lightpush(self, pubsub_topic: str, message: WakuMessage) -> dict:
        return self._req("POST", "/lightpush/v3/message",
                         json={"pubsubTopic": pubsub_topic, "message": message_to_json(message)}).json()

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.poll_interval):
            try:
                self.poll_once()
            except Exception as e:  # noqa: BLE001 - keep polling; nwaku may be restarting
                log.warning("nwaku poll failed: %s", e)

    def poll_once(self) -> int:
        """Fetch new relay messages for every subscribed topic, fill gaps from the store; returns deliveries."""
        with self._lock:
            topics = sorted({s.pubsub_topic for s in self._subs})
        delivered = 0
        for topic in topics:
            raw = self._req("GET", f"/relay/v1/messages/{urllib.parse.quote(topic, safe='')}").json()
            msgs = []
            for d in raw if isinstance(raw, list) else []:
                try:
                    msgs.append(message_from_json(d))
                except ValueError as e:
                    log.info("skipping malformed message from nwaku: %s", e)
            if len(raw) >= RELAY_CACHE_SIZE:  # the cache may have overflowed: close the gap from the store
                self.gap_fills += 1
                since = self._last_ts.get(topic)
                msgs = [rm.message for rm in self.query_store(self.store_peer, [], since, None, pubsub_topic=topic)] \
                    + msgs
            for m in sorted(msgs, key=lambda m: m.timestamp or 0):
                delivered += self._deliver(ReceivedMessage(topic, m, m.hash(topic)))
        return delivered

    def _deliver(self, rm: ReceivedMessage) -> int:
        with self._lock:
            if rm.hash in self._seen:
                return 0
            self._seen[rm.hash] = None
            if len(self._seen) > SEEN_LIMIT:
                self._seen.popitem(last=False)
            self._last_ts[rm.pubsub_topic] = max(self._last_ts.get(rm.pubsub_topic, 0), rm.message.timestamp or 0)
            subs = [s for s in self._subs if s.matches(rm)]
        for s in subs:
            try:
                s.callback(rm)
            except Exception:  # noqa: BLE001
                log.exception("subscriber failed")
        return 1

    # --- store ---
    def query_store(self, peer: str | None, content_topics: Sequence[str], start: int | None = None,
                    end: int | None = None, *, pubsub_topic: str | None = None, page_size: int = 100,
                    forward: bool = True) -> Iterator[ReceivedMessage]:
        cursor = None
        while True:
            params = {"includeData": "true", "ascending": "true" if forward else "false", "pageSize": page_size}
            for k, v in (("peerAddr", peer), ("pubsubTopic", pubsub_topic), ("startTime", start),
                         ("endTime", end), ("cursor", cursor)):
                if v is not None:
                    params[k] = v
            if content_topics:
                params["contentTopics"] = ",".join(content_topics)
            body = self._req("GET", "/store/v3/messages", params=params).json()
            if body.get("statusCode", 200) != 200:
                raise RestError(f"store query: {body.get('statusCode')} {body.get('statusDesc')}")
            page = body.get("messages") or []
            for kv in page:
                m = message_from_json(kv.get("message"))
                ps = kv.get("pubsubTopic") or pubsub_topic or ""
                yield ReceivedMessage(ps, m, hash_from_json(kv["messageHash"]) if kv.get("messageHash") else m.hash(ps))
            cursor = body.get("paginationCursor")
            if not cursor or not page:
                return
