"""Waku benchmarks: relay throughput and per-hop latency between two processes, store pages per second.
Each figure is printed next to a reference measured in the same run. Small by default; ARCHIVIST_SLOW=1 runs
the full size. ARCHIVIST_BENCH_WAKU_PROFILE=FILE runs the load node's trio thread under cProfile (its own CPU
clock) and saves the stats in FILE when it stops (read with pstats; docs/BENCHMARKS.md "Waku load");
ARCHIVIST_BENCH_WAKU_LOOPTRACE=FILE runs it with the loop trace (core/waku/looptrace.py), printed per phase.
ARCHIVIST_BENCH_RELAY_ROUNDS=N runs only the load benchmark's relay phase, N times against one node with the store
prober running (ARCHIVIST_BENCH_RELAY_N messages each, default 5,000): msg/s per round, publishing and storing
apart, and the publisher's state when a round is slow. The load benchmark's floods, prober and profiler entry point
are in waku_load.py."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import pytest

from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig
from core.waku.store_db import MessageStore
from core.waku.store_query import handle_store_v3
from tests.bench.table import pct, record
from tests.bench.waku_load import CT_LOAD, IN_FLIGHT, LOAD_PEERS, N_LOAD, _connection_flood, _cpu_s, \
    _lightpush_flood, _load_node, _own_cpu_s, _Prober, _relay_flood, print_looptrace, sqlite_reference_rate
from tests.bench.waku_stored import SETTLE_S, wait_stored

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


def _stop(node, prober) -> None:
    """Stop the prober (if it started) and the node under load (an `archivist wakunode` child)."""
    if prober is not None:
        prober.stop()
    node.terminate()
    node.wait(15)
    node.stdout.close()


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
    record("waku", "relay 1 hop between processes, 1 KiB, p50", p50 * 1e3, "ms", "round trip via a child `cat`",
           ref_lat * 1e3)
    record("waku", f"relay throughput, 1 KiB x {N_TPUT}", rate, "msg/s", "lines/s via a child `cat`", ref_rate)
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



# --- load: lightpush, relay and connection floods against one node (helpers: waku_load.py) ---
@pytest.mark.skipif(os.environ.get("ARCHIVIST_LOAD_QUICK") != "1", reason="quick load run: ARCHIVIST_LOAD_QUICK=1")
def test_load_throughput_quick(tmp_path):
    """Lightpush and relay throughput only (960 messages each, no prober, no connection flood): for comparing
    py-libp2p fixes in a minute."""
    n, db = 960, tmp_path / "quick.db"
    node = _load_node(db)
    try:
        info = json.loads(node.stdout.readline())
        addr, server_id = info["listen_addrs"][0], info["peer_id"]
        load_before = os.getloadavg()[0]
        t0, c0 = time.monotonic(), _cpu_s(node.pid)
        n_lp = _lightpush_flood(addr, server_id, n)
        lp_rate = n_lp / (wait_stored(db, n_lp, 120) - t0)
        c1 = _cpu_s(node.pid)
        t0, t1 = _relay_flood(addr, server_id, db, n, n_lp)
        relay_rate = n / (t1 - t0)
        lp_cpu, relay_cpu = (c1 - c0) / n_lp, (_cpu_s(node.pid) - c1) / n   # node CPU s per message
    finally:
        node.terminate()
        node.wait(15)
        node.stdout.close()
    print(f"\nquick load, {n} x 1 KiB each: lightpush v3 ({LOAD_PEERS} peers x {IN_FLIGHT} in flight) "
          f"{lp_rate:,.0f} msg/s (node CPU {lp_cpu * 1e3:.2f} ms per request), relay {relay_rate:,.0f} msg/s (node "
          f"CPU {relay_cpu * 1e3:.2f} ms per message) (load average {load_before:.2f} -> {os.getloadavg()[0]:.2f})")
    record("waku", f"quick load: lightpush v3, {n} x 1 KiB, {LOAD_PEERS} peers", lp_rate, "msg/s", goal=">= 1,000")
    record("waku", f"quick load: relay, {n} x 1 KiB", relay_rate, "msg/s", goal=">= 2,000")
    assert lp_rate > 0 and relay_rate > 0


@pytest.mark.skipif(not SLOW, reason="load benchmark: ARCHIVIST_SLOW=1 (make bench)")
def test_load_floods_and_store_latency(tmp_path):
    db = tmp_path / "load.db"
    node = _load_node(db)
    prober = None
    try:
        info = json.loads(node.stdout.readline())
        addr, server_id = info["listen_addrs"][0], info["peer_id"]
        load_before = os.getloadavg()[0]
        # seed a little history, then the idle reference latency
        seed = EmbeddedWakuBackend(NodeConfig(ws_port=None))
        seed.start()
        try:
            seed.add_peer(addr)
            for i in range(100):
                assert seed.lightpush(server_id, PS, WakuMessage(b"seed %d" % i, CT_LOAD,
                                                                 timestamp=time.time_ns())).status_code == 200
        finally:
            seed.stop()
        wait_stored(db, 100, 30)
        prober = _Prober(addr)
        t0 = time.monotonic()
        prober.wait_samples(t0, 200 if SLOW else 50)
        idle = prober.between(t0, time.monotonic())
        phases = {"idle": (t0, time.monotonic())}

        t0, c0, flood = time.monotonic(), _cpu_s(node.pid), {}
        n_lp = _lightpush_flood(addr, server_id, N_LOAD, flood)
        clients_cpu = (_own_cpu_s() - flood["ready_cpu"]) / n_lp    # the flooding peers, from their first request
        t1 = wait_stored(db, 100 + n_lp, 120)
        lp_rate, lp_lat = n_lp / (t1 - t0), prober.between(t0, t1)
        lp_rate_flood = n_lp / (t1 - flood["ready"])    # without the peers' start-up and connections
        phases["lightpush"] = (t0, t1)
        c1 = _cpu_s(node.pid)

        relay_info = {}
        t0, t1 = _relay_flood(addr, server_id, db, N_LOAD, 100 + n_lp, relay_info)
        relay_rate, relay_lat = N_LOAD / (t1 - t0), prober.between(t0, t1)
        phases["relay"] = (t0, t1)
        lp_cpu, relay_cpu = (c1 - c0) / n_lp, (_cpu_s(node.pid) - c1) / N_LOAD   # node CPU s per message

        t0 = time.monotonic()
        sockets, handshakes = _connection_flood(addr, 300, 8 if SLOW else 4)
        t1 = time.monotonic()
        conn_lat = prober.between(t0, t1)
    finally:
        _stop(node, prober)

    # references in the same run: SQLite alone storing the same number of 1 KiB messages (the floor of "stored")
    ref_rate = sqlite_reference_rate(tmp_path / "ref.db", N_LOAD)
    ms = 1e3
    print(f"\nload, {N_LOAD} x 1 KiB per flood, node in its own process, store prober in a third:")
    print(f"  lightpush v3 from {LOAD_PEERS} peers ({IN_FLIGHT} in flight each): {lp_rate:,.0f} msg/s accepted and "
          f"stored, node CPU {lp_cpu * ms:.2f} ms per message (reference: SQLite alone stores {ref_rate:,.0f} msg/s "
          f"in batches of 500); from the first request (the peers' start-up left out) {lp_rate_flood:,.0f} msg/s, "
          f"the flooding peers' CPU {clients_cpu * ms:.2f} ms per request (this process)")
    print(f"  relay from 1 peer: {relay_rate:,.0f} msg/s accepted and stored (published in "
          f"{relay_info['published']:.2f} s; {relay_info.get('late', 0)} commits seen late), node CPU "
          f"{relay_cpu * ms:.2f} ms per message (same reference)")
    print(f"  load average during the run: {load_before:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"  connection flood: {sockets} silent sockets from 30 addresses + {handshakes} full handshakes "
          f"({handshakes / (t1 - t0):,.1f}/s) in {t1 - t0:.1f} s")
    for name, lat in (("idle (reference)", idle), ("during lightpush", lp_lat), ("during relay", relay_lat),
                      ("during connections", conn_lat)):
        print(f"  store v3 latency {name}: p50 {pct(lat, 0.5) * ms:.1f} ms, p95 {pct(lat, 0.95) * ms:.1f} ms "
              f"({len(lat)} queries)")
    print_looptrace(phases)
    record("waku", f"load: lightpush v3 from {LOAD_PEERS} peers, {N_LOAD} x 1 KiB", lp_rate, "msg/s",
           "SQLite alone, batches of 500", ref_rate, ">= 1,000")
    record("waku", f"load: relay, {N_LOAD} x 1 KiB", relay_rate, "msg/s", "SQLite alone, batches of 500", ref_rate,
           ">= 2,000")
    for name, lat in (("during lightpush", lp_lat), ("during relay", relay_lat), ("during connections", conn_lat)):
        record("waku", f"store v3 p95 {name}", pct(lat, 0.95) * ms, "ms", "idle p95", pct(idle, 0.95) * ms,
               "< 20 ms")
    assert lp_rate > 0 and relay_rate > 0 and handshakes > 0 and idle


RELAY_ROUNDS = int(os.environ.get("ARCHIVIST_BENCH_RELAY_ROUNDS", "0"))


@pytest.mark.skipif(not RELAY_ROUNDS, reason="relay phase alone, repeated: ARCHIVIST_BENCH_RELAY_ROUNDS=N")
def test_relay_rounds(tmp_path):
    """The load benchmark's relay phase alone, RELAY_ROUNDS times against one node (a fresh publisher each round,
    the store prober running): for a stall seen once in 17 full runs (issue 21, sixth pass). A round is slow
    below a quarter of the median rate so far; its publisher's state is printed when publishing took longer than
    n / 250 s."""
    n = int(os.environ.get("ARCHIVIST_BENCH_RELAY_N", "5000"))
    db = tmp_path / "rounds.db"
    node = _load_node(db)
    prober = None
    rows, stored = [], 0
    try:
        info = json.loads(node.stdout.readline())
        addr, server_id = info["listen_addrs"][0], info["peer_id"]
        prober = _Prober(addr)
        print(f"\nrelay rounds, {n} x 1 KiB each, 1 publisher, store prober running (reference: the store wait's "
              f"settle of {SETTLE_S * 1e3:.0f} ms)")
        for r in range(RELAY_ROUNDS):
            load, c0 = os.getloadavg()[0], _cpu_s(node.pid)
            ri = {}
            t0, t1 = _relay_flood(addr, server_id, db, n, stored, ri, slow_s=n / 250)
            stored += n
            rate, lat = n / (t1 - t0), prober.between(t0, t1)
            rows.append(rate)
            slow = rate < statistics.median(rows) / 4
            print(f"  round {r + 1}: {rate:,.0f} msg/s; published in {ri['published']:.2f} s, stored "
                  f"{t1 - t0 - ri['published']:.2f} s later; {ri.get('late', 0)} commits seen late; node CPU "
                  f"{(_cpu_s(node.pid) - c0) / n * 1e3:.2f} ms/msg; store p50 {pct(lat, 0.5) * 1e3:.1f} ms "
                  f"({len(lat)} queries); load {load:.2f}{'  SLOW' if slow else ''}", flush=True)
            if "state" in ri:
                print("  publisher state while publishing was slow:\n" + ri["state"], flush=True)
    finally:
        _stop(node, prober)
    slow = [r for r in rows if r < statistics.median(rows) / 4]
    print(f"  {len(rows)} rounds: median {statistics.median(rows):,.0f} msg/s, min {min(rows):,.0f}, max "
          f"{max(rows):,.0f}; {len(slow)} slow (below a quarter of the median)")
    assert len(rows) == RELAY_ROUNDS and not slow
