"""Helpers of the Waku load benchmark (tests/bench/test_waku_bench.py): the node under load, the floods, the store
prober process and the profiler entry point. Run from the repository root:
`python -m tests.bench.waku_load probe MULTIADDR` (the prober), `python -m tests.bench.waku_load profile
lightpush|relay N FILE` (one flood against a fresh node whose trio thread runs under cProfile), `python -m
tests.bench.waku_load flood lightpush|relay N` (the same flood without the profiler, beside SQLite alone). When the messages are
stored is tests/bench/waku_stored.py's."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from core.pb import waku_store_v3_pb2 as v3pb
from core.waku.embedded import EmbeddedWakuBackend
from core.waku.message import WakuMessage
from core.waku.node import NodeConfig
from tests.bench.waku_stored import wait_stored

SLOW = os.environ.get("ARCHIVIST_SLOW") == "1"
PS = "/waku/2/rs/16/32"

# --- load: lightpush, relay and connection floods against one node, with store latency during each ---------------
# The node under load runs in its own process (`archivist wakunode`, as on a user's machine), the flooding peers in
# this process, and a store prober in a third process (`python -m tests.bench.waku_load probe ...`) that
# prints one latency per line, so each phase's latencies are the lines printed during it. Loopback only; every
# phase is bounded in count and by a deadline.
N_LOAD = 5_000 if SLOW else 1_000
LOAD_PEERS, IN_FLIGHT = 10, 8
LOAD_REQUEST_TIMEOUT_S = 30
CT_LOAD = "/bench/1/load/proto"
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Prober:
    """A store v3 client in its own process: the latest 20 messages, one query after another."""

    def __init__(self, addr: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.bench.waku_load", "probe", addr],
                                     stdout=subprocess.PIPE, text=True, cwd=_REPO)
        self.samples: list[tuple[float, float]] = []   # (time received, latency s)
        self._cond = threading.Condition()   # notified on every sample and when the prober's output ends
        self._ended = False
        assert self.proc.stdout.readline().strip() == "ready"
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.proc.stdout:
                with self._cond:
                    self.samples.append((time.monotonic(), float(line)))
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def between(self, t0: float, t1: float) -> list[float]:
        with self._cond:
            return [lat for t, lat in self.samples if t0 <= t <= t1]

    def wait_samples(self, t0: float, n: int, timeout: float = 30) -> None:
        def count() -> int:
            return sum(t >= t0 for t, _ in self.samples)
        with self._cond:
            self._cond.wait_for(lambda: self._ended or count() >= n, timeout)
            assert count() >= n, "the store prober stopped answering"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()


def sqlite_reference_rate(path, n: int) -> float:
    """The floor of "accepted and stored": SQLite alone (the node's MessageStore) storing n 1 KiB messages in batches
    of 500, in messages per second."""
    from core.waku.store_db import MessageStore
    ref = MessageStore(path)
    try:
        msgs = [(PS, WakuMessage(os.urandom(1024), CT_LOAD, timestamp=time.time_ns())) for _ in range(n)]
        t = time.perf_counter()
        for i in range(0, n, 500):
            ref.add_many(msgs[i:i + 500])
        return n / (time.perf_counter() - t)
    finally:
        ref.close()


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` (Linux /proc): what each flood costs the node."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    """CPU seconds (user + system, every thread) used so far by this process: the flooding clients' cost."""
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _lightpush_flood(addr: str, server_id: str, n: int, info: dict | None = None) -> int:
    """LOAD_PEERS fresh peers, each with IN_FLIGHT lightpush v3 requests open at a time; returns how many were
    sent (n rounded down to a multiple of LOAD_PEERS * IN_FLIGHT). `info` gets "ready" (time.monotonic() once
    every peer is started and connected, when the first request goes) and "ready_cpu" (this process's CPU then):
    the peers' start-up (keys, Noise handshakes, identify, metadata) is not the node's lightpush work."""
    import trio
    from core.waku.node import WakuNode

    async def main():
        # light clients: they relay another shard, so the node does not relay the flood back to them
        peers = [WakuNode(NodeConfig(ws_port=None, shards=(1,))) for _ in range(LOAD_PEERS)]
        per_task = n // (LOAD_PEERS * IN_FLIGHT)
        failed = []
        async with trio.open_nursery() as nursery:
            for p in peers:
                await nursery.start(p.run)
            async with trio.open_nursery() as dials:    # at once: py-libp2p's dial waited 250 ms after connecting
                for p in peers:                         # until libp2p fix 38 (one after another: 2.5 s of a flood);
                    dials.start_soon(p.connect, addr)   # kept concurrent so that runs with it off compare
            if info is not None:
                info["ready"], info["ready_cpu"] = time.monotonic(), _own_cpu_s()

            async def push(p, idx, count):
                for i in range(count):
                    m = WakuMessage(os.urandom(1024), CT_LOAD, timestamp=time.time_ns())
                    with trio.move_on_after(LOAD_REQUEST_TIMEOUT_S) as scope:
                        r = await p.lightpush(server_id, PS, m)
                    if scope.cancelled_caught:  # an answer lost under load: fail the run instead of hanging
                        failed.append(f"no answer within {LOAD_REQUEST_TIMEOUT_S} s")
                    elif r.status_code != 200:
                        failed.append(r.status_desc)
            async with trio.open_nursery() as flood:
                for p in peers:
                    for k in range(IN_FLIGHT):
                        flood.start_soon(push, p, k, per_task)
            nursery.cancel_scope.cancel()
        assert not failed, f"{len(failed)} of {n} lightpush requests failed: {failed[:3]}"
    trio.run(main)
    return n // (LOAD_PEERS * IN_FLIGHT) * LOAD_PEERS * IN_FLIGHT


def _connection_flood(addr: str, silent: int, seconds: float) -> tuple[int, int]:
    """Silent sockets from 127.0.0.2..31 (kept open until the node closes them) and full Noise handshakes by
    fresh peers, for `seconds`: (sockets opened, handshakes completed)."""
    import socket
    port = int(addr.split("/tcp/")[1].split("/")[0])
    socks, handshakes = [], 0
    for i in range(silent):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i % 30}", 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        socks.append(s)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            b = EmbeddedWakuBackend(NodeConfig(ws_port=None))
            b.start()
            try:
                b.add_peer(addr)
                handshakes += 1
            finally:
                b.stop()
    finally:
        for s in socks:
            s.close()
    return len(socks), handshakes


def _load_node(db) -> subprocess.Popen:
    """`archivist wakunode` storing in `db`, with the limits raised for the floods from 127.0.0.1."""
    env = dict(os.environ)
    if os.environ.get("ARCHIVIST_BENCH_WAKU_PROFILE"):   # cProfile of the node's trio thread, saved at its exit
        env["ARCHIVIST_WAKU_PROFILE"] = os.environ["ARCHIVIST_BENCH_WAKU_PROFILE"]
    if os.environ.get(LOOPTRACE_BENCH_ENV):              # core/waku/looptrace.py, saved at its exit
        env["ARCHIVIST_WAKU_LOOPTRACE"] = os.environ[LOOPTRACE_BENCH_ENV]
    return subprocess.Popen([sys.executable, "-m", "core.cli", "wakunode", "--no-ws", "--store", str(db),
                             "--max-incoming-per-ip", "64", "--requests-per-s", "100000", "--request-burst",
                             "100000", "--rate-exempt-ip", "127.0.0.1"], stdout=subprocess.PIPE, text=True, env=env)


LOOPTRACE_BENCH_ENV = "ARCHIVIST_BENCH_WAKU_LOOPTRACE"


def print_looptrace(phases: dict) -> None:
    """With ARCHIVIST_BENCH_WAKU_LOOPTRACE=FILE: the load node's loop trace, cut into the benchmark's phases
    (name -> (t0, t1), monotonic): loop passes, the longest ones, and the store/lightpush handlers' lifetimes,
    own run times and scheduling points (core/waku/looptrace.py)."""
    path = os.environ.get(LOOPTRACE_BENCH_ENV)
    if not path or not os.path.exists(path):
        return
    from core.waku.looptrace import summary
    with open(path) as f:
        raw = json.load(f)
    for name, (t0, t1) in phases.items():
        s = summary(raw, t0, t1)
        print(f"  loop trace, {name}: passes {_fmt(s['batches'])}; full GCs {_fmt(s['gc2'])}, their CPU "
              f"{_fmt(s['gc2_cpu'])}")
        for kind, v in s["tagged"].items():
            print(f"    {kind}: lifetime {_fmt(v['life'])}; own run {_fmt(v['run'])}; CPU {_fmt(v['cpu'])}; "
                  f"scheduling points {_fmt(v['yields'])}")
        for b in s["long_batches"][:3]:
            print(f"    long pass {b['ms']} ms, {b['tasks']} task steps; longest (name, wall ms, CPU ms): {b['top']}")
    print("  busiest coroutines (steps, total s, longest ms): " + "; ".join(
        f"{n} {c} {t:.2f} {m * 1e3:.1f}" for n, (c, t, m) in list(raw["steps"].items())[:12]))


def _fmt(p: dict) -> str:
    if not p:
        return "-"
    return f"p50 {p['p50']:.1f} p95 {p['p95']:.1f} max {p['max']:.1f} (n {p['n']})"


def _relay_flood(addr: str, server_id: str, db, n: int, stored_before: int, info: dict | None = None,
                 slow_s: float | None = None) -> tuple[float, float]:
    """n messages published by one relay peer; (start, time all were stored). `info` gets the publishing time
    ("published", s), the late commits seen while waiting for the store ("late", wait_until) and, when the
    publishing takes more than `slow_s`, the publisher's state at that moment ("state", publisher_state)."""
    info = {} if info is None else info
    pub = EmbeddedWakuBackend(NodeConfig(ws_port=None))
    pub.start()
    done = threading.Event()
    watcher = None
    try:
        pub.add_peer(addr)
        pub.wait_for_relay_peer(server_id)
        if slow_s is not None:
            def watch():
                if not done.wait(slow_s):
                    info["state"] = publisher_state(pub)
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
        t0 = time.monotonic()
        for i in range(n):
            pub.publish(PS, WakuMessage(os.urandom(1024), CT_LOAD, timestamp=time.time_ns()))
        info["published"] = time.monotonic() - t0
        done.set()
        return t0, wait_stored(db, stored_before + n, 120, info)
    finally:
        done.set()
        if watcher is not None:
            watcher.join(30)
        pub.stop()


def publisher_state(pub: EmbeddedWakuBackend) -> str:
    """What a publishing backend is doing: every thread's stack (faulthandler), its trio tasks and, per relay
    peer, the send queue length and the yamux streams' send windows and buffers (read on its trio thread)."""
    import faulthandler
    import tempfile
    import trio

    def on_loop() -> list[str]:
        node, out = pub.node, []
        for pid, q in list(node.pubsub.peer_queues.items()):
            out.append(f"send queue {pid.pretty()[-8:]}: {len(q)} RPCs, moved {time.monotonic() - q.moved_at:.2f} s "
                       f"ago, full since {q.full_since}")
        for pid, conns in list(node.host.get_network().connections.items()):
            for c in conns if isinstance(conns, list) else [conns]:
                mux = c.muxed_conn
                for sid, st in list(getattr(mux, "streams", {}).items()):
                    out.append(f"yamux {pid.pretty()[-8:]} stream {sid}: send window {st.send_window}, recv window "
                               f"{st.recv_window}, buffered {len(getattr(st, 'recv_buffer', b'') or b'')}")

        def tree(task, depth=0):
            out.append("  " * depth + f"task {task.name}")
            for nursery in task.child_nurseries:
                for child in nursery.child_tasks:
                    tree(child, depth + 1)
        tree(trio.lowlevel.current_root_task())
        return out

    try:
        lines = trio.from_thread.run_sync(on_loop, trio_token=pub._token)
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why it could not be read
        lines = [f"(the publisher's loop did not answer: {e!r})"]
    with tempfile.TemporaryFile("w+") as f:
        faulthandler.dump_traceback(f, all_threads=True)
        f.seek(0)
        lines.append(f.read())
    return "\n".join(lines)


def _probe(addr: str) -> None:
    """Store v3 queries for the latest 20 messages, one after another; one latency (s) per line on stdout. A light
    client, as the flooding peers: it relays another shard, so the floods are not relayed to it and its latencies
    are the node's, not its own relay work's (until issue 21's fix it relayed shard 32 and received every flood
    message: store p95 241 ms during lightpush and 294 ms during relay in that run, docs/BENCHMARKS.md)."""
    client = EmbeddedWakuBackend(NodeConfig(ws_port=None, shards=(1,)))
    client.start()
    try:
        peer = client.add_peer(addr)
        print("ready", flush=True)
        while True:
            req = v3pb.StoreQueryRequest(request_id="p", include_data=True, content_topics=[CT_LOAD],
                                         pubsub_topic=PS, pagination_forward=False, pagination_limit=20)
            t = time.perf_counter()
            resp = client._peer_call("store query", peer, client.node.store_query_v3, peer, req)
            assert resp.status_code == 200, resp.status_desc
            print(time.perf_counter() - t, flush=True)
    finally:
        client.stop()


def _profile(phase: str, n: int, out: str | None) -> None:
    """One flood against a fresh load node whose trio thread runs under cProfile; prints the rate, the node's CPU
    per message and its top 25 functions by own time (docs/BENCHMARKS.md, "Where the node's time goes").
    out=None: the same flood without the profiler, beside SQLite alone storing as many messages (the reference)."""
    import pstats
    import tempfile
    if out:
        os.environ["ARCHIVIST_BENCH_WAKU_PROFILE"] = out
    else:
        os.environ.pop("ARCHIVIST_BENCH_WAKU_PROFILE", None)
    db = Path(tempfile.mkdtemp()) / "profile.db"
    node = _load_node(db)
    try:
        info = json.loads(node.stdout.readline())
        addr, server_id = info["listen_addrs"][0], info["peer_id"]
        load, c0, t0 = os.getloadavg()[0], _cpu_s(node.pid), time.monotonic()
        me0, flood = _own_cpu_s(), {}
        if phase == "lightpush":
            n = _lightpush_flood(addr, server_id, n, flood)
            me1 = _own_cpu_s()
            clients = (me1 - me0) / n     # the flooding peers (this process), not their wait for SQLite
            t1 = wait_stored(db, n, 120)
            rate = n / (t1 - t0)
            flood["rate"], flood["clients"] = n / (t1 - flood["ready"]), (me1 - flood["ready_cpu"]) / n
        else:
            t0, t1 = _relay_flood(addr, server_id, db, n, 0)
            clients = (_own_cpu_s() - me0) / n     # the publisher (this process), its wait for SQLite included
            rate = n / (t1 - t0)
        cpu = (_cpu_s(node.pid) - c0) / n
    finally:
        node.terminate()
        node.wait(30)
        node.stdout.close()
    if not out:
        ref_rate = sqlite_reference_rate(db.parent / "ref.db", n)
        alone = (f" [from the first request: {flood['rate']:,.0f} msg/s, clients' CPU {flood['clients'] * 1e3:.2f} "
                 f"ms]") if flood else ""
        print(f"{phase} x {n}: {rate:,.0f} msg/s, node CPU {cpu * 1e3:.2f} ms per message, clients' CPU "
              f"{clients * 1e3:.2f} ms{alone} (reference: SQLite alone stores {ref_rate:,.0f} msg/s in batches of "
              f"500), load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
        return
    print(f"{phase}: {rate:,.0f} msg/s, node CPU {cpu * 1e3:.2f} ms per message (profiled), clients' CPU "
          f"{clients * 1e3:.2f} ms, load average {load:.2f}")
    pstats.Stats(out).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":  # from the repository root: python -m tests.bench.waku_load probe MULTIADDR
    if sys.argv[1] == "probe":   # ... or: profile lightpush|relay N FILE
        _probe(sys.argv[2])
    elif sys.argv[1] == "profile":
        _profile(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "flood":    # ... or: flood lightpush|relay N (no profiler; SQLite alone as the reference)
        _profile(sys.argv[2], int(sys.argv[3]), None)
