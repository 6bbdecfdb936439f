"""A local HTTP server implementing the nwaku REST endpoints the backend uses (nwaku cannot run here).
Store answers come from our real MessageStore + store v3 query logic; the relay cache keeps 50 per topic."""
from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.nwaku_rest import RELAY_CACHE_SIZE, message_from_json, message_to_json
from core.waku.store_db import MessageStore
from core.waku.store_query import handle_store_v3
from core.waku.message import decode_message


class NwakuStub:
    def __init__(self):
        self.store = MessageStore()
        self.cache: dict[str, list] = {}
        self.subscriptions: set[str] = set()
        self.peers: list[str] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj=None):
                body = json.dumps(obj).encode() if obj is not None else b""
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self):
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")

            def do_GET(self):
                u = urllib.parse.urlparse(self.path)
                if u.path == "/health":
                    return self._send(200, {"nodeHealth": "Ready"})
                if u.path == "/debug/v1/info":
                    return self._send(200, {"listenAddresses": ["/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2stub"]})
                if u.path.startswith("/relay/v1/messages/"):
                    topic = urllib.parse.unquote(u.path[len("/relay/v1/messages/"):])
                    with stub.lock:
                        msgs, stub.cache[topic] = stub.cache.get(topic, []), []
                    return self._send(200, [message_to_json(m) for m in msgs])
                if u.path == "/store/v3/messages":
                    q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query).items()}
                    req = v3pb.StoreQueryRequest(include_data=q.get("includeData") == "true",
                                                 pagination_forward=q.get("ascending", "true") == "true",
                                                 pagination_limit=int(q.get("pageSize", 20)))
                    if q.get("contentTopics"):
                        req.content_topics.extend(q["contentTopics"].split(","))
                    if q.get("pubsubTopic"):
                        req.pubsub_topic = q["pubsubTopic"]
                    if q.get("startTime"):
                        req.time_start = int(q["startTime"])
                    if q.get("endTime"):
                        req.time_end = int(q["endTime"])
                    if q.get("cursor"):
                        req.pagination_cursor = bytes.fromhex(q["cursor"][2:])
                    r = handle_store_v3(stub.store, req)
                    out = {"requestId": r.request_id, "statusCode": r.status_code, "statusDesc": r.status_desc,
                           "messages": [{"messageHash": "0x" + kv.message_hash.hex(), "pubsubTopic": kv.pubsub_topic,
                                         "message": message_to_json(decode_message(kv.message.SerializeToString()))}
                                        for kv in r.messages]}
                    if r.HasField("pagination_cursor"):
                        out["paginationCursor"] = "0x" + r.pagination_cursor.hex()
                    return self._send(200, out)
                self._send(404, {"error": "not found"})

            def do_POST(self):
                u = urllib.parse.urlparse(self.path)
                body = self._body()
                if u.path == "/relay/v1/subscriptions":
                    stub.subscriptions.update(body)
                    return self._send(200)
                if u.path == "/admin/v1/peers":
                    stub.peers.extend(body)
                    return self._send(200)
                if u.path.startswith("/relay/v1/messages/"):
                    topic = urllib.parse.unquote(u.path[len("/relay/v1/messages/"):])
                    try:
                        stub.inject(topic, message_from_json(body))
                    except ValueError as e:
                        return self._send(400, {"error": str(e)})
                    return self._send(200)
                if u.path == "/lightpush/v3/message":
                    stub.inject(body["pubsubTopic"], message_from_json(body["message"]))
                    return self._send(200, {"statusCode": 200, "relayPeerCount": 1})
                self._send(404, {"error": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def inject(self, topic: str, m) -> None:
        """A message arriving from the Waku network at the nwaku node."""
        with self.lock:
            if topic in self.subscriptions:
                c = self.cache.setdefault(topic, [])
                c.append(m)
                del c[:-RELAY_CACHE_SIZE]
        self.store.add(topic, m)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
        self.store.close()
