"""Support commands: build, inspect, verify, synth."""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from core.archive.build import build_archives
from core.archive.errors import ArchiveError
from core.archive.inspect import inspect_path
from core.archive.verify import verify_folder, verify_index_file


def _hex_topic(s: str) -> bytes:
    v = s[2:] if s.lower().startswith("0x") else s
    if len(v) != 8:
        raise argparse.ArgumentTypeError(f"topic {s!r} is not 4 bytes of hex (0x + 8 hex digits)")
    try:
        return bytes.fromhex(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"topic {s!r} is not hex") from None


def _community_id(s: str) -> str:
    v = s.lower()
    if not v.startswith("0x") or len(v) != 68:
        raise argparse.ArgumentTypeError("community ID must be 0x + 66 hex digits (a compressed public key)")
    try:
        bytes.fromhex(v[2:])
    except ValueError:
        raise argparse.ArgumentTypeError("community ID is not hex") from None
    return v


def _ts(t: int) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def encrypt_transform(a):
    """--encrypt-key KEY[@TIMESTAMP_MS]: hash-ratchet encryption of each archive (encrypted communities)."""
    if not a.encrypt_key:
        return None
    from core.status.archive_encryption import transform_from_cli
    return transform_from_cli(a.encrypt_key, a.community_id)


def print_build_result(res, as_json: bool) -> None:
    from core.cli import print_json
    if as_json:
        print_json(res.to_json())
        return
    print(f"{len(res.new_archive_ids)} new archives, {res.messages} messages, data {res.data_bytes} bytes")
    for r in res.archives:
        print(f"  {r['id']}  {_ts(r['from'])} .. {_ts(r['to'])}  {r['size']} bytes")
    if res.magnet:
        print(f"infohash {res.infohash}\nmagnet   {res.magnet}")


def add_build_arguments(p) -> None:
    """The arguments of `build` (shared with `spark-build`, which must accept exactly the same)."""
    p.add_argument("--db", required=True, help="SQLite file with a waku_messages table")
    p.add_argument("--community-id", required=True, type=_community_id)
    p.add_argument("--topic", required=True, action="append", type=_hex_topic, help="0x<8 hex>; repeat per topic")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--torrent-dir", required=True)
    p.add_argument("--start", type=int, help="UNIX seconds (default: end of the last archive, else oldest message)")
    p.add_argument("--end", type=int, help="UNIX seconds (default: now)")
    p.add_argument("--tracker", action="append", help="announce URL; repeat; none by default")
    p.add_argument("--encrypt-key", help="hex community group key: encrypt archives (encrypted communities)")
    p.add_argument("--json", action="store_true")


def cmd_build(a) -> int:
    try:
        res = build_archives(a.db, a.community_id, a.topic, a.data_dir, a.torrent_dir, start=a.start, end=a.end,
                             trackers=a.tracker or [], transform=encrypt_transform(a))
    except (ArchiveError, FileNotFoundError) as e:
        print(f"archivist build: {e}", file=sys.stderr)
        return 2
    print_build_result(res, a.json)
    return 0


def cmd_inspect(a) -> int:
    from core.cli import print_json
    try:
        ins = inspect_path(a.path)
    except (ArchiveError, FileNotFoundError, OSError) as e:
        print(f"archivist inspect: {e}", file=sys.stderr)
        return 2
    if a.json:
        out = ins.to_json()
        if a.messages:
            for row in out["archives"]:
                if row["error"] is None and ins.folder is not None:
                    row["message_list"] = [
                        {"timestamp": m.timestamp, "topic": "0x" + m.topic.hex(), "hash": "0x" + m.hash.hex(),
                         "sig": "0x" + m.sig.hex(), "payload_bytes": len(m.payload)}
                        for m in ins.messages(row["id"])]
        print_json(out)
        return 0
    if ins.torrent:
        print(f"torrent {ins.torrent.name}  infohash {ins.torrent.infohash}  {ins.torrent.num_pieces} pieces")
    print(f"{len(ins.rows)} archives in {ins.source} ({ins.kind})")
    print(f"{'archive id':68} {'from':16} {'to':16} {'offset':>10} {'size':>9} {'padding':>8} {'pieces':>6} {'msgs':>7}")
    for r in ins.rows:
        msgs = r.error or (str(r.messages) if r.messages is not None else "-")
        print(f"{r.archive_id:68} {_ts(r.start):16} {_ts(r.end):16} {r.offset:>10} {r.size:>9} {r.padding:>8} "
              f"{len(r.pieces):>6} {msgs:>7}")
        if a.messages and r.error is None and ins.folder is not None:
            for m in ins.messages(r.archive_id):
                print(f"    {_ts(m.timestamp)}  topic 0x{m.topic.hex()}  hash 0x{m.hash.hex()[:16]}..  "
                      f"{len(m.payload)} bytes")
    return 0


def cmd_verify(a) -> int:
    from core.cli import print_json
    p = Path(a.path)
    try:
        if p.is_dir():
            torrent = a.torrent or next(iter(sorted(p.parent.parent.glob(f"*/{p.name}.torrent"))), None)
            report = verify_folder(p, torrent)
        elif p.suffix == ".torrent":
            from core.archive.torrent import parse_metainfo
            mi = parse_metainfo(p.read_bytes())
            report = verify_folder(p.parent / mi.name if (p.parent / mi.name).is_dir() else p.parent, p)
        elif p.exists():
            report = verify_index_file(p)
        else:
            print(f"archivist verify: {a.path}: no such file or folder", file=sys.stderr)
            return 2
    except (ArchiveError, OSError) as e:
        print(f"archivist verify: {e}", file=sys.stderr)
        return 1
    if a.json:
        print_json(report.to_json())
    else:
        for f in report.findings:
            where = f" [{f.archive_id}]" if f.archive_id else ""
            print(f"{f.severity.upper()} {f.code}{where}: {f.message}")
        verdict = "OK" if report.ok else "FAILED"
        print(f"{verdict}: {report.archives} archives, {report.messages} messages checked in {report.path}")
    return 0 if report.ok else 1


def cmd_synth(a) -> int:
    from core.cli import print_json
    from core.synth import synthesize
    res = synthesize(a.out, messages=a.messages, weeks=a.weeks, channels=a.channels, min_payload=a.min_payload,
                     max_payload=a.max_payload, seed=a.seed, start=a.start)
    if a.json:
        print_json(res.to_json())
    else:
        print(f"wrote {res.messages} messages to {res.path}\ncommunity {res.community_id}\n"
              f"topics {' '.join(res.topics)}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("build", help="build archives from a status-go waku_messages database")
    add_build_arguments(p)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("inspect", help="list archives and messages of a folder, index, data or .torrent")
    p.add_argument("path")
    p.add_argument("--messages", action="store_true", help="list each archive's messages too")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("verify", help="check every invariant; exit 1 with the reason if anything is wrong")
    p.add_argument("path")
    p.add_argument("--torrent", help="torrent to check against (default: <torrent-dir>/<id>.torrent if found)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("synth", help="generate a deterministic waku_messages database shaped like Status traffic")
    p.add_argument("--out", required=True)
    p.add_argument("--messages", type=int, default=10_000)
    p.add_argument("--weeks", type=int, default=8)
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--min-payload", type=int, default=80)
    p.add_argument("--max-payload", type=int, default=1200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=1_700_000_000)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_synth)
