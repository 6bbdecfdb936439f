"""`archivist wakunode`: a standalone Waku service node (relay, store with 30-day retention, metadata,
lightpush). Its first line of output is JSON: {"peer_id": ..., "listen_addrs": [...]}; then one JSON line per
relayed message with --print-messages. Stops on SIGINT/SIGTERM."""
from __future__ import annotations

import gc
import json
import signal
import sys
import threading
from pathlib import Path


def cmd_wakunode(a) -> int:
    from core.waku.connection_limits import ConnectionLimits
    from core.waku.embedded import EmbeddedWakuBackend
    from core.waku.networks import UnknownNetwork, resolve
    from core.waku.node import NodeConfig
    from core.waku.store_db import DAY_NS, MessageStore

    store = None
    if not a.no_store:
        store = MessageStore(a.store or ":memory:", retention_ns=int(a.retention_days * DAY_NS))
    try:
        net = resolve(a.network, cluster_id=a.cluster, shards=a.shard, pubsub_topics=a.pubsub_topic,
                      enrtree_url="" if a.no_discovery else a.enrtree, max_message_size=a.max_message_size)
    except UnknownNetwork as e:
        print(json.dumps({"error": str(e)}), file=sys.stderr)
        return 2
    cfg = NodeConfig(host=a.host, tcp_port=a.tcp_port, ws_port=None if a.no_ws else a.ws_port,
                     cluster_id=net.cluster_id, shards=net.shards, key_path=a.key, store=store,
                     pubsub_topics=net.pubsub_topics, enrtree_url=net.enrtree_url, peer_store_path=a.peer_store,
                     max_message_size=net.max_message_size,
                     max_future_s=a.max_future_s, read_timeout_s=a.read_timeout_s,
                     limits=ConnectionLimits(max_incoming=a.max_incoming, max_incoming_per_ip=a.max_incoming_per_ip,
                                             max_handshakes=a.max_handshakes,
                                             handshake_timeout_s=a.handshake_timeout_s,
                                             max_streams_per_conn=a.max_streams_per_conn,
                                             outbound_reserve=a.outbound_reserve),
                     protected_peers=tuple(a.protected_peer), requests_per_s=a.requests_per_s,
                     request_burst=a.request_burst, requests_per_ip_s=a.requests_per_ip_s,
                     request_burst_per_ip=a.request_burst_per_ip, rate_exempt_ips=tuple(a.rate_exempt_ip))
    node = EmbeddedWakuBackend(cfg)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        node.start()
    except Exception as e:  # port in use, bad key file...
        print(json.dumps({"error": str(e)}), file=sys.stderr)
        return 2
    try:
        gc.freeze()   # what start-up made (modules, protobuf descriptors, the host) is left out of full collections
        print(json.dumps({"peer_id": node.peer_id, "listen_addrs": node.listen_addrs}), flush=True)
        for peer in a.peer or []:
            try:
                node.add_peer(peer)
            except Exception as e:
                print(json.dumps({"event": "dial_failed", "peer": peer, "error": str(e)}), flush=True)
        if a.print_messages:
            def show(rm):
                print(json.dumps({"event": "message", "pubsub_topic": rm.pubsub_topic,
                                  "content_topic": rm.message.content_topic, "hash": rm.hash.hex(),
                                  "timestamp": rm.message.timestamp, "size": len(rm.message.payload)}), flush=True)
            for t in cfg.topics():
                node.subscribe(t, [], show)
        stop.wait()
    finally:
        node.stop()
        if store is not None:
            store.close()
    return 0


def register(sub) -> None:
    from core.waku.connection_limits import ConnectionLimits
    from core.waku import ratelimit as r
    from core.waku.networks import NETWORKS
    p = sub.add_parser("wakunode")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--tcp-port", type=int, default=0, help="TCP port (default: any free port)")
    p.add_argument("--ws-port", type=int, default=0, help="WebSocket port (default: any free port)")
    p.add_argument("--no-ws", action="store_true", help="no WebSocket listener")
    p.add_argument("--network", choices=sorted(NETWORKS), default=None,
                   help="preset of cluster, shards and bootstrap tree (default local: cluster 16, shard 32, no "
                        "discovery; status: the Status fleet, shards 32 64 128 256, its enrtree); options win")
    p.add_argument("--cluster", type=int, default=None, help="cluster id (Status: 16)")
    p.add_argument("--shard", type=int, action="append", help="static shard to relay (repeatable; default 32)")
    p.add_argument("--enrtree", help="EIP-1459 enrtree:// URL to discover peers from at start")
    p.add_argument("--no-discovery", action="store_true", help="no DNS discovery, even with --network status")
    p.add_argument("--peer-store", type=Path,
                   help="SQLite file of known peers and their back-off (default: in memory)")
    p.add_argument("--pubsub-topic", action="append", default=[], help="relay this pubsub topic instead")
    p.add_argument("--key", type=Path, help="node key file (created with mode 0600 if missing)")
    p.add_argument("--store", type=Path, help="SQLite store file (default: in memory)")
    p.add_argument("--no-store", action="store_true", help="do not serve the store protocol")
    p.add_argument("--retention-days", type=float, default=30.0, help="store retention (default 30 days)")
    p.add_argument("--max-message-size", type=int, default=0,
                   help="bytes (default 1 MiB as the Status fleet; nwaku's default is 153600)")
    p.add_argument("--max-future-s", type=float, default=20.0,
                   help="refuse messages dated more than this many seconds ahead (default 20, nwaku's)")
    p.add_argument("--read-timeout-s", type=float, default=10.0,
                   help="store/lightpush/metadata streams that send nothing for this long are reset (default 10)")
    d = ConnectionLimits()
    p.add_argument("--max-incoming", type=int, default=d.max_incoming,
                   help=f"incoming connections of unprotected peers (default {d.max_incoming})")
    p.add_argument("--max-incoming-per-ip", type=int, default=d.max_incoming_per_ip,
                   help=f"incoming connections per remote IP (default {d.max_incoming_per_ip})")
    p.add_argument("--max-handshakes", type=int, default=d.max_handshakes,
                   help=f"incoming connections in their handshake; the oldest is dropped beyond "
                        f"(default {d.max_handshakes})")
    p.add_argument("--handshake-timeout-s", type=float, default=d.handshake_timeout_s,
                   help=f"deadline of an incoming connection's handshake (default {d.handshake_timeout_s})")
    p.add_argument("--max-streams-per-conn", type=int, default=d.max_streams_per_conn,
                   help=f"inbound streams open at once on one connection (default {d.max_streams_per_conn})")
    p.add_argument("--outbound-reserve", type=int, default=d.outbound_reserve,
                   help=f"connections kept for dialled and protected peers (default {d.outbound_reserve})")
    p.add_argument("--protected-peer", action="append", default=[],
                   help="peer id always admitted, never refused for limits (repeatable; --peer peers are too)")
    p.add_argument("--requests-per-s", type=float, default=r.PEER_RATE_S,
                   help=f"store/lightpush requests per peer id and second (default {r.PEER_RATE_S:g}) ...")
    p.add_argument("--request-burst", type=int, default=r.PEER_BURST,
                   help=f"... with this burst; beyond, 429 (default {r.PEER_BURST})")
    p.add_argument("--requests-per-ip-s", type=float, default=r.IP_RATE_S,
                   help=f"the same per source address, over all its peer ids (default {r.IP_RATE_S:g}) ...")
    p.add_argument("--request-burst-per-ip", type=int, default=r.IP_BURST,
                   help=f"... with this burst (default {r.IP_BURST}); protected peers skip it")
    p.add_argument("--rate-exempt-ip", action="append", default=[],
                   help="source address without an address budget (repeatable; default none)")
    p.add_argument("--peer", action="append", help="multiaddr to dial at start (repeatable; protected)")
    p.add_argument("--print-messages", action="store_true", help="print one JSON line per relayed message")
    p.set_defaults(func=cmd_wakunode)
