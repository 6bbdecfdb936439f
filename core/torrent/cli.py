"""Headless commands: `archivist seed` and `archivist fetch MAGNET`."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

from core.archive.constants import community_id_arg
from core.archive.errors import ArchiveError
from core.archive.inspect import size_text
from core.torrent.magnet import parse_peer
from core.torrent.selection import add_selection_arguments, selection_from_args


def _peer(s: str) -> tuple[str, int]:
    p = parse_peer(s.strip())
    if p is None:
        raise argparse.ArgumentTypeError(f"peer {s!r} is not HOST:PORT (or [IPv6]:PORT), with a port from 1 to 65535")
    return p


def _default_dir(sub: str) -> Path:
    from platformdirs import user_data_dir
    return Path(user_data_dir("archivist")) / sub


def _settings(a):
    from core.torrent.settings import TorrentSettings
    kw = dict(listen_port=a.port, metadata_timeout=a.metadata_timeout)
    if a.upload_limit:
        kw["upload_rate_limit"] = a.upload_limit
    if a.local:
        return TorrentSettings.loopback(**kw)
    return TorrentSettings(listen_host=a.listen, **kw)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=None, help="folder holding <communityID>/{data,index}")
    p.add_argument("--state-dir", type=Path, default=None, help="resume data (default: <data-dir>/.torrent-state)")
    p.add_argument("--port", type=int, default=0, help="listen port (default: any free port)")
    p.add_argument("--listen", default="0.0.0.0", help="listen address")
    p.add_argument("--local", action="store_true", help="no DHT/LSD/UPnP/NAT-PMP, TCP only, 127.0.0.1")
    p.add_argument("--metadata-timeout", type=float, default=20.0)
    p.add_argument("--upload-limit", type=int, default=0, help="bytes/s per torrent (0: unlimited)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")


def register(sub) -> None:
    p = sub.add_parser("seed")
    _add_common(p)
    p.add_argument("--torrent-dir", type=Path, required=True, help="folder with <communityID>.torrent files")
    p.add_argument("--community-id", default=None, type=community_id_arg, help="seed only this community")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    p.set_defaults(func=cmd_seed)

    p = sub.add_parser("fetch")
    p.add_argument("magnet")
    add_selection_arguments(p)
    p.add_argument("--peer", type=_peer, action="append", default=[], help="connect to HOST:PORT (repeatable)")
    p.add_argument("--community-id", default=None, type=community_id_arg,
                   help="expected community ID (default: the magnet's dn)")
    p.add_argument("--timeout", type=float, default=None, help="give up after this many seconds")
    _add_common(p)
    p.set_defaults(func=cmd_fetch, mode=None)


def _stop_on_signals(*also: threading.Event) -> threading.Event:
    """An event set by SIGINT/SIGTERM (with every event in `also`)."""
    stop = threading.Event()

    def handler(*_) -> None:
        for e in (stop, *also):
            e.set()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, handler)
    return stop


def cmd_seed(a) -> int:
    from core.cli import print_json
    from core.torrent.service import TorrentService
    data_dir = a.data_dir or _default_dir("archives")
    paths = sorted(a.torrent_dir.glob(f"{a.community_id or '0x*'}.torrent"))
    if not paths:
        print(f"archivist seed: no torrent in {a.torrent_dir}", file=sys.stderr)
        return 2
    stop = _stop_on_signals()
    svc = TorrentService(_settings(a), a.state_dir or data_dir / ".torrent-state").start()
    mtimes: dict[Path, float] = {}
    try:
        deadline = time.monotonic() + a.duration if a.duration else None
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            for p in paths:     # a rebuilt torrent replaces the seeded one (only the newest is seeded)
                m = p.stat().st_mtime
                if mtimes.get(p) != m:
                    mtimes[p] = m
                    try:
                        st = svc.seed(p.name[:-len(".torrent")], data_dir, p.read_bytes())
                    except (ArchiveError, OSError) as e:
                        print(f"archivist seed: {p.name}: {e}", file=sys.stderr)
                        return 2
                    info = {"event": "seeding", "port": svc.listen_port, **st.snapshot()}
                    print_json(info) if a.json else print(f"seeding {st.community_id} on port {svc.listen_port}\n"
                                                            f"  magnet {st.magnet}")
            for st in list(svc.seeds.values()):
                snap = st.snapshot()
                print_json({"event": "status", **snap}) if a.json else print(
                    f"{snap['state']:<20} peers {snap['peers']:<3} uploaded {size_text(snap['uploaded'])}")
            stop.wait(1.0)
    finally:
        svc.close()
    return 0


def cmd_fetch(a) -> int:
    from core.cli import print_json
    from core.torrent import events as ev
    from core.torrent.fetch import FINAL
    from core.torrent.service import TorrentService
    try:
        sel = selection_from_args(a)
    except ValueError as e:
        print(f"archivist fetch: {e}", file=sys.stderr)
        return 2
    data_dir = a.data_dir or _default_dir("archives")
    ended = threading.Event()                 # the job reached a final state, or a signal came
    stop = _stop_on_signals(ended)
    svc = TorrentService(_settings(a), a.state_dir or data_dir / ".torrent-state")
    last = {"t": 0.0}

    def show(e: ev.TorrentEvent) -> None:
        if e.kind != ev.JOB:
            return
        d = e.data
        if d["state"] in FINAL:
            ended.set()
        if a.json:
            print_json({"event": "job", **d})
        elif d["state"] != "downloading" or time.monotonic() - last["t"] > 1:
            last["t"] = time.monotonic()
            print(f"{d['state']:<12} {d['progress'] * 100:5.1f}% of {size_text(d['wanted_bytes'])} "
                  f"({d['archives']}/{d['archives_total']} archives) {d['message']}", flush=True)

    svc.subscribe(show)
    svc.start()
    try:
        job = svc.fetch(a.magnet, data_dir, sel, community_id=a.community_id, peers=a.peer)
        ended.wait(a.timeout or None)         # no polling: the job's end, a signal, or --timeout (0: none)
        # a final state is set on the alert thread just before job.done: wait for that instant, not longer
        if not job.wait(10 if ended.is_set() and not stop.is_set() else 0):
            job.pause()
            print(f"archivist fetch: stopped at {job.snapshot()['progress'] * 100:.1f}%; run again to resume",
                  file=sys.stderr)
            return 3
    finally:
        svc.close()
    snap = job.snapshot()
    if a.json:
        print_json({"event": "done", **snap})
    if job.state != "complete":
        print(f"archivist fetch: {job.code}: {job.message}", file=sys.stderr)
        return 1
    if not a.json:
        print(f"complete: {snap['archives']} archives, {snap['wanted_bytes']} bytes in {data_dir / job.community_id}")
    return 0
