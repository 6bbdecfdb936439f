"""Waku benchmarks: relay throughput and per-hop latency between two processes, store pages per second.
Each figure is printed next to a reference measured in the same run. Small by default; ARCHIVIST_SLOW=1 runs
the full size."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore
from core.waku.store_query import handle_store_v3

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
PS = "/waku/2/rs/16/32"
CT = "/bench/1/relay/proto"
N_LAT, N_TPUT = (500, 5000) if SLOW else (50, 400)


def _pipe_reference(n: int, size: int = 1024) -> tuple[float, float]:
    """Floor: round trip of one line through a child `cat` (latency) and n lines through it (lines/s)."""
    p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        line = "x" * size + "\n"
        lat = []
        for _ in range(50):
            t = time.perf_counter()
            p.stdin.write(line)
            p.stdin.flush()
            p.stdout.readline()
            lat.append(time.perf_counter() - t)

        def feed():
            for _ in range(n):
                p.stdin.write(line)
            p.stdin.flush()
        t = time.perf_counter()
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        for _ in range(n):
            p.stdout.readline()
        writer.join()
        rate = n / (time.perf_counter() - t)
    finally:
        # never leave the child (or a blocked writer) behind, whatever happened above
        p.kill()
        p.wait()
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except (BrokenPipeError, OSError):
                pass
    return statistics.median(lat), rate


def test_relay_latency_and_throughput_between_processes():
    proc = subprocess.Popen([sys.executable, "-m", "core.cli", "wakunode", "--no-store", "--print-messages",
                             "--max-message-size", str(1 << 20)], stdout=subprocess.PIPE, text=True)
    ours = EmbeddedWakuBackend(NodeConfig())
    ours.start()
    try:
        info = json.loads(proc.stdout.readline())
        ours.add_peer(info["listen_addrs"][0])
        ours.wait_for_relay_peer(info["peer_id"])
        lat = []
        for i in range(N_LAT):
            m = WakuMessage(os.urandom(1024), CT, timestamp=time.time_ns())
            t = time.perf_counter()
            ours.publish(PS, m)
            assert json.loads(proc.stdout.readline())["hash"] == m.hash(PS).hex()
            lat.append(time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(N_TPUT):
            ours.publish(PS, WakuMessage(os.urandom(1024), CT, timestamp=time.time_ns()))
        for i in range(N_TPUT):
            proc.stdout.readline()
        rate = N_TPUT / (time.perf_counter() - t)
    finally:
        ours.stop()
        proc.terminate()
        proc.wait(15)
    ref_lat, ref_rate = _pipe_reference(N_TPUT)
    p50, p99 = statistics.median(lat), sorted(lat)[int(len(lat) * 0.99) - 1]
    print(f"\nrelay, 1 hop between processes, 1 KiB: p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms "
          f"(reference: 1 KiB round trip through a child `cat` {ref_lat * 1e3:.3f} ms)")
    print(f"relay throughput, 1 KiB: {rate:,.0f} msg/s over {N_TPUT} messages "
          f"(reference: {ref_rate:,.0f} lines/s through a child `cat`)")
    assert rate > 0 and p50 > 0


def test_store_pages_per_second(tmp_path):
    n = 20_000 if SLOW else 3_000
    store = MessageStore(tmp_path / "bench.db")
    t0 = time.time_ns()
    store.add_many((PS, WakuMessage(os.urandom(512), CT, timestamp=t0 + i)) for i in range(n))
    server = EmbeddedWakuBackend(NodeConfig(store=store))
    client = EmbeddedWakuBackend(NodeConfig())
    server.start()
    client.start()
    try:
        client.add_peer(server.listen_addrs[0])
        t = time.perf_counter()
        got = sum(1 for _ in client.query_store(server.peer_id, [CT], pubsub_topic=PS, page_size=100))
        net = time.perf_counter() - t
    finally:
        client.stop()
        server.stop()
    assert got == n
    # reference: the same pages answered by the query logic in-process (no network, no framing)
    t = time.perf_counter()
    cursor, pages = None, 0
    while True:
        req = v3pb.StoreQueryRequest(include_data=True, content_topics=[CT], pubsub_topic=PS,
                                     pagination_forward=True, pagination_limit=100)
        if cursor:
            req.pagination_cursor = cursor
        resp = handle_store_v3(store, req)
        pages += 1
        if not resp.HasField("pagination_cursor"):
            break
        cursor = resp.pagination_cursor
    local = time.perf_counter() - t
    store.close()
    print(f"\nstore v3 over the network: {n / 100 / net:,.0f} pages/s of 100 x 512 B ({net / (n / 100) * 1e3:.1f} ms "
          f"per page) (reference: in-process query logic {pages / local:,.0f} pages/s)")
