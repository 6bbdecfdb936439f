"""Support commands: inspect, verify; and the arguments and output of `build` / `spark-build`.

`build` itself is registered by core/status/build_cli.py (its `--encrypt-key` needs the Status layer) and `synth`
by core/synth_cli.py: core/archive imports neither core.status nor core.synth (tests/unit/test_layering.py).
"""
from __future__ import annotations

import argparse
import datetime
import functools
import gc
import os
import sys
from pathlib import Path

from core.archive.constants import community_id_arg
from core.archive.errors import ArchiveError
from core.archive.inspect import inspect_path, utc_text
from core.archive.torrent import is_magnet_link
from core.archive.verify import verify_folder, verify_index_file
from core.hextext import from_hex, strip_0x


def _hex_topic(s: str) -> bytes:
    if len(strip_0x(s)) != 8:
        raise argparse.ArgumentTypeError(f"topic {s!r} is not 4 bytes of hex (0x + 8 hex digits)")
    try:
        return from_hex(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"topic {s!r} is not hex") from None


_ts = utc_text          # UTC "YYYY-MM-DD HH:MM"; a timestamp no date can hold is shown as the number


_date_of_ordinal = datetime.date.fromordinal


class _Timestamps:
    """_ts for many timestamps: the date once per day, the time of day from a table (a 200k-archive listing
    formats 400k timestamps; strftime for each took a quarter of a second). Same text as _ts."""

    _MINUTES = [f"{m // 60:02d}:{m % 60:02d}" for m in range(1440)]
    _END = 253_402_300_800          # year 10000: where strftime's fixed width ends

    def __init__(self) -> None:
        self._days: dict[int, str] = {}

    def __call__(self, t: int) -> str:
        if not 0 <= t < self._END:
            return _ts(t)
        day, sec = divmod(t, 86_400)
        date = self._days.get(day)
        if date is None:            # 1970-01-01 is ordinal 719163; isoformat is strftime's %Y-%m-%d from 1970 on
            date = self._days[day] = _date_of_ordinal(day + 719_163).isoformat()
        return f"{date} {self._MINUTES[sec // 60]}"


class _Days(dict):
    """{day since 1970: "YYYY-MM-DD"}, each made when first asked for; a day outside _Timestamps' fast range raises
    _NotInRange (_entry_lines then formats every timestamp the slow, exact way)."""

    def __missing__(self, day: int) -> str:
        if not 0 <= day < _Timestamps._END // 86_400:
            raise _NotInRange(day)
        date = self[day] = _date_of_ordinal(day + 719_163).isoformat()
        return date


class _NotInRange(Exception):
    pass


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
    p.add_argument("--community-id", required=True, type=community_id_arg)
    p.add_argument("--topic", required=True, action="append", type=_hex_topic, help="0x<8 hex>; repeat per topic")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--torrent-dir", required=True)
    p.add_argument("--start", type=int, help="UNIX seconds (default: end of the last archive, else oldest message)")
    p.add_argument("--end", type=int, help="UNIX seconds (default: now)")
    p.add_argument("--tracker", action="append", help="announce URL; repeat; none by default")
    p.add_argument("--encrypt-key", help="hex community group key: encrypt archives (encrypted communities)")
    p.add_argument("--json", action="store_true")


def _safe(text: str, limit: int = 200) -> str:
    """One printable line of outside text (keys, paths, messages): no control characters, bounded length."""
    if len(text) <= limit and text.isprintable():
        return text
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:limit + 1])
    return text if len(text) <= limit else text[:limit] + "…"


def _write_json(obj) -> None:
    """core.cli.print_json's output, through json.dumps (C encoder): json.dump's pure-Python path took 20 s
    for a 200k-archive listing."""
    import json
    sys.stdout.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()


def _fail(cmd: str, message: str, code: int) -> int:
    print(f"archivist {cmd}: {_safe(message, 400)}", file=sys.stderr)
    return code


def _one_shot(cmd):
    """inspect/verify: no cyclic GC while they run (collections over 200k live index entries cost more than they
    could free; re-enabled after, as tests call commands in-process), and a closed pipe (`| head`) ends the
    command quietly instead of with a traceback."""
    @functools.wraps(cmd)
    def run(a) -> int:
        was = gc.isenabled()
        gc.disable()
        try:
            return cmd(a)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        finally:
            if was:
                gc.enable()
    return run


def _unusable(p: Path) -> str | None:
    """Why a path cannot be used at all (exit 2), if so. Reading a FIFO or a device would block or never end."""
    if not p.exists():
        return f"{p}: no such file or folder"
    if not (p.is_dir() or p.is_file()):
        return f"{p}: not a regular file or folder"
    return None


MAGNET_USAGE = "a magnet link needs the network: run `archivist fetch MAGNET` first, then give the folder"


@_one_shot
def cmd_inspect(a) -> int:
    """Exit 0 listed, 1 faults found (index faults, archives that cannot be read), 2 unusable input."""
    from core.archive.inspect import Unusable
    if is_magnet_link(a.path):
        return _fail("inspect", MAGNET_USAGE, 2)
    if why := _unusable(Path(a.path)):
        return _fail("inspect", why, 2)
    try:
        ins = inspect_path(a.path)
        if a.json:
            out = ins.to_json()
            if a.messages and ins.folder is not None:
                for row in out["archives"]:
                    if row["error"] is None:
                        row["message_list"] = [
                            {"timestamp": m.timestamp, "topic": "0x" + m.topic.hex(), "hash": "0x" + m.hash.hex(),
                             "sig": "0x" + m.sig.hex(), "payload_bytes": len(m.payload)}
                            for m in ins.messages(row["id"])]
            _write_json(out)
            return 1 if ins.faulty else 0
        _print_inspection(ins, a.messages)
    except Unusable as e:
        return _fail("inspect", str(e), 2)
    except ArchiveError as e:
        return _fail("inspect", f"{e.code}: {e}", 1)
    except OSError as e:
        return _fail("inspect", f"{a.path}: cannot read: {e.strerror or e}", 2)
    return 1 if ins.faulty else 0


def _archive_lines(rows) -> list[str]:
    """One listing line per archive. One comprehension, %-formatting, the printable test inline: a 200k-archive
    listing in about half the time of a loop calling helpers (2x faster than f-strings with format specs)."""
    ts, fmt = _Timestamps(), _LINE.__mod__
    return [fmt((a if len(a := r.archive_id) <= 68 and a.isprintable() else _safe(a, 68), ts(r.start), ts(r.end),
                 r.offset, r.size, r.padding, len(r.pieces),
                 m if len(m := r.error or ("-" if r.messages is None else str(r.messages))) <= 300
                 and m.isprintable() else _safe(m, 300)))
            for r in rows]


_LINE = "%-68s %-16s %-16s %10d %9d %8d %6d %7s"


def _entry_lines(entries) -> list[str]:
    """_archive_lines of bare rows (Inspection.bare: no data file, so no message counts and no read errors), made
    from the index entries (in data order) without an ArchiveRow per archive, and with each timestamp's date and
    time of day looked up inline (the 16 characters of _ts: "%-16s" of them is "%s %s")."""
    from core.archive.constants import PIECE_LENGTH as pl
    days, minutes, fmt = _Days(), _Timestamps._MINUTES, _ENTRY_LINE.__mod__
    try:
        return [fmt((a if len(a) <= 68 and a.isprintable() else _safe(a, 68),
                     days[(s := e.start) // 86_400], minutes[s % 86_400 // 60],
                     days[(t := e.end) // 86_400], minutes[t % 86_400 // 60],
                     o := e.offset, z := e.size, e.padding, (o + z) // pl - o // pl))
                for a, e in entries.items()]
    except _NotInRange:             # a timestamp no date can hold (hostile index): per timestamp, as _ts does
        ts = _Timestamps()
        return [_LINE % (a if len(a) <= 68 and a.isprintable() else _safe(a, 68), ts(e.start), ts(e.end), e.offset,
                         e.size, e.padding, len(e.pieces), "-") for a, e in entries.items()]


_ENTRY_LINE = "%-68s %s %s %s %s %10d %9d %8d %6d       -"


def _print_inspection(ins, messages: bool) -> None:
    out = []
    if ins.torrent:
        out.append(f"torrent {_safe(ins.torrent.name)}  infohash {ins.torrent.infohash}  "
                   f"{ins.torrent.num_pieces} pieces")
        if ins.folder is None:
            out.append(f"no archive folder named {_safe(ins.torrent.name)} near the torrent: archives not listed")
    out.append(f"{len(ins.entries) if ins.bare else len(ins.rows)} archives in {_safe(ins.source)} ({ins.kind})")
    out.append(f"{'archive id':68} {'from':16} {'to':16} {'offset':>10} {'size':>9} {'padding':>8} {'pieces':>6} "
               f"{'msgs':>7}")
    if not (messages and ins.folder is not None):
        out += _entry_lines(ins.entries) if ins.bare else _archive_lines(ins.rows)
    else:
        for r in ins.rows:
            out += _archive_lines([r])
            if r.error is None:
                sys.stdout.write("\n".join(out) + "\n")
                out = [f"    {_ts(m.timestamp)}  topic 0x{m.topic.hex()}  hash 0x{m.hash.hex()[:16]}..  "
                       f"{len(m.payload)} bytes" for m in ins.messages(r.archive_id)]
    if messages and ins.folder is None and (ins.entries if ins.bare else ins.rows):
        out.append("no data file: messages cannot be listed")
    for f in ins.findings:
        where = f" [{_safe(f.archive_id, 80)}]" if f.archive_id else ""
        out.append(f"{f.severity.upper()} {f.code}{where}: {_safe(f.message, 400)}")
    sys.stdout.write("\n".join(out) + "\n")


@_one_shot
def cmd_verify(a) -> int:
    """Exit 0 verified (warnings allowed unless --strict), 1 faults found, 2 unusable input."""
    from core.archive.constants import DATA_FILE, INDEX_FILE
    from core.archive.inspect import folder_for_torrent
    from core.archive.torrent import read_metainfo
    from core.archive.verify import Report
    if is_magnet_link(a.path) or (a.torrent and is_magnet_link(a.torrent)):
        return _fail("verify", MAGNET_USAGE, 2)
    p = Path(a.path)
    discover = a.torrent is None
    try:
        if why := _unusable(p):
            return _fail("verify", why, 2)
        if a.torrent is not None and not Path(a.torrent).is_file():
            return _fail("verify", f"{a.torrent}: no such torrent file", 2)
        if p.is_dir():
            if not (p / INDEX_FILE).exists() and not (p / DATA_FILE).exists():
                return _fail("verify", f"{a.path} is not an archive folder (no index, no data)", 2)
            report = verify_folder(p, a.torrent, discover=discover)
        elif p.suffix == ".torrent":
            try:
                mi = read_metainfo(p)
            except ArchiveError as e:
                report = Report(str(p))
                report.add(e.code, str(e))
            else:
                folder = folder_for_torrent(p, mi)
                if folder is None:
                    return _fail("verify", f"no archive folder named {mi.name} beside {a.path}: nothing to verify "
                                 "the torrent against", 2)
                report = verify_folder(folder, p)
        else:
            report = verify_index_file(p, a.torrent, discover=discover)
    except OSError as e:
        return _fail("verify", f"{e.filename or a.path}: cannot read: {e.strerror or e}", 2)
    passed = report.passed(a.strict)
    if a.json:
        _write_json(report.to_json(a.strict))
        return 0 if passed else 1
    out = []
    for f in report.findings:
        where = f" [{_safe(f.archive_id, 80)}]" if f.archive_id else ""
        out.append(f"{f.severity.upper()} {f.code}{where}: {_safe(f.message, 400)}")
    pieces = f"piece hashes checked against {report.torrent}" if report.torrent else "piece hashes NOT checked"
    verdict = "OK" if passed else ("FAILED (--strict: warnings count as faults)" if report.ok else "FAILED")
    out.append(f"{verdict}: {report.archives} archives, {report.messages} messages checked in {_safe(report.path)}; "
               f"{pieces}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0 if passed else 1


def register(sub) -> None:
    p = sub.add_parser("inspect")
    p.add_argument("path")
    p.add_argument("--messages", action="store_true", help="list each archive's messages too")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("verify")
    p.add_argument("path")
    p.add_argument("--torrent", help="torrent to check piece hashes against (default: <id>.torrent found beside "
                   "the folder or in a sibling folder, used only if its name and file lengths match)")
    p.add_argument("--strict", action="store_true", help="warnings (e.g. pieces-unchecked) are faults too: exit 1")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)
