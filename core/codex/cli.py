"""Codex commands: codex-inspect, codex-verify (an index CID and its archives), codex-publish, codex-fetch.

Exit codes as in core/cli.py: 0 success, 1 the content checked is bad, 2 usage, input or node error.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from core.archive.constants import community_id_arg
from core.archive.errors import ArchiveError
from core.archive.inspect import utc_text as _ts   # the one rule for a timestamp shown to people
from core.codex import index as cindex
from core.codex.backend import (CodexMember, CodexOwner, checked_download, verify_archive_blob, verify_index_blob)
from core.codex.client import DEFAULT_API, CodexClient
from core.codex.errors import CodexError, CodexVerifyError


def _untransform(a):
    if not getattr(a, "encrypt_key", None):
        return None
    from core.status.archive_encryption import GroupKeyStore, open_archive_bytes, parse_cli_key
    store = GroupKeyStore()
    store.add(parse_cli_key(a.encrypt_key, a.community_id))
    return lambda raw: open_archive_bytes(raw, store)


def _client(a) -> CodexClient:
    return CodexClient(a.api, read_timeout=a.timeout, download_deadline=max(a.timeout * 10, 60))


def _fail(cmd: str, e: Exception) -> int:
    print(f"archivist {cmd}: {e}", file=sys.stderr)
    return 2


def cmd_inspect(a) -> int:
    from core.cli import print_json
    local = Path(a.cid)
    with _client(a) as c:
        try:
            raw = local.read_bytes() if local.is_file() else checked_download(c, a.cid, network=a.network)
            untransform = _untransform(a)
            entries = cindex.decode_index(untransform(raw) if untransform else raw)
            present = {aid: c.exists(e.cid) for aid, e in entries.items()} if a.check_present else {}
        except (CodexError, ArchiveError, OSError) as e:
            return _fail("codex-inspect", e)
    rows = [{"id": aid, "from": e.start, "to": e.end, "cid": e.cid, "topics": ["0x" + t.hex() for t in e.topics],
             **({"on_node": present[aid]} if aid in present else {})}
            for aid, e in sorted(entries.items(), key=lambda kv: (kv[1].start, kv[0]))]
    problems = [p.__dict__ for p in cindex.check_index(entries)]
    if a.json:
        print_json({"index_cid": a.cid, "index_bytes": len(raw), "archives": rows, "problems": problems})
    else:
        print(f"Codex index {a.cid}: {len(rows)} archives, {len(raw)} bytes")
        for r in rows:
            flag = "" if "on_node" not in r else ("  on node" if r["on_node"] else "  NOT on node")
            print(f"  {r['id']}  {_ts(r['from'])} .. {_ts(r['to'])}  {r['cid']}{flag}")
        for p in problems:
            print(f"  problem {p['code']}: {p['message']}")
    return 1 if problems else 0


def cmd_verify(a) -> int:
    from core.cli import print_json
    findings, messages = [], 0
    try:
        untransform = _untransform(a)
    except ArchiveError as e:
        return _fail("codex-verify", e)
    with _client(a) as c:
        try:
            entries = verify_index_blob(checked_download(c, a.cid, network=a.network), untransform, cid=a.cid)
        except CodexVerifyError as e:
            findings.append({"code": e.code, "message": str(e), "archive_id": None})
            entries = {}
        except CodexError as e:
            return _fail("codex-verify", e)
        for aid, e in sorted(entries.items(), key=lambda kv: (kv[1].start, kv[0])):
            try:
                messages += len(verify_archive_blob(aid, e, checked_download(c, e.cid, network=a.network),
                                                    untransform).messages)
            except CodexError as err:
                findings.append({"code": err.code, "message": str(err), "archive_id": aid})
    ok = not findings
    if a.json:
        print_json({"index_cid": a.cid, "ok": ok, "archives": len(entries), "messages": messages,
                    "findings": findings})
    else:
        print(f"{'OK' if ok else 'BAD'}: {len(entries)} archives, {messages} messages")
        for f in findings:
            print(f"  {f['code']}: {f['message']}")
    return 0 if ok else 1


def cmd_publish(a) -> int:
    from core.cli import print_json
    transform = None
    if a.encrypt_key:
        from core.status.archive_encryption import transform_from_cli
        transform = transform_from_cli(a.encrypt_key, a.community_id)
    with _client(a) as c:
        owner = CodexOwner(c, a.state_dir, a.community_id, transform=transform)
        try:
            res = owner.publish(a.db, a.topic, end=a.end, start=a.start)
        except (CodexError, ArchiveError, FileNotFoundError) as e:
            return _fail("codex-publish", e)
    if a.json:
        print_json(res.to_json())
    else:
        print(f"{len(res.new_archive_ids)} new archives, {res.messages} messages, {res.uploaded_bytes} bytes uploaded")
        print(f"index CID {res.index_cid}")
    return 0


def cmd_fetch(a) -> int:
    from core.cli import print_json
    from core.torrent.selection import selection_from_args
    with _client(a) as c:
        try:
            sel = selection_from_args(a)
            res = CodexMember(c, untransform=_untransform(a), network=a.network).sync(a.cid, (), sel)
        except (CodexError, ArchiveError, ValueError) as e:
            return _fail("codex-fetch", e)
    if a.json:
        print_json(res.to_json())
    else:
        print(f"{len(res.archives)} of {len(res.chosen)} chosen archives fetched, {len(res.messages())} messages")
        for aid, err in res.failed.items():
            print(f"  {aid}: {err.code}: {err}")
    return 0 if res.ok else 1


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api", default=os.environ.get("CODEX_API_URL", DEFAULT_API),
                   help="node REST base URL incl. /api/codex/v1 or /api/storage/v1 (default: $CODEX_API_URL or "
                        f"{DEFAULT_API})")
    p.add_argument("--timeout", type=float, default=30.0, help="read timeout in seconds (default 30)")
    p.add_argument("--json", action="store_true")


def _reader(p: argparse.ArgumentParser) -> None:
    p.add_argument("cid", help="index CID (the archive link announced by the community)")
    p.add_argument("--network", action="store_true", help="fetch from the network, not only the local store")
    p.add_argument("--encrypt-key", help="community group key HEX[@TIMESTAMP_MS] for encrypted communities")
    p.add_argument("--community-id", type=community_id_arg, help="needed with --encrypt-key")


def register(sub) -> None:
    from core.archive.cli import _hex_topic
    p = sub.add_parser("codex-inspect")
    _common(p)
    _reader(p)
    p.add_argument("--check-present", action="store_true", help="ask the node whether each archive is stored")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("codex-verify")
    _common(p)
    _reader(p)
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("codex-publish")
    _common(p)
    p.add_argument("--db", required=True, help="status-go waku_messages SQLite file")
    p.add_argument("--community-id", required=True, type=community_id_arg)
    p.add_argument("--topic", action="append", required=True, type=_hex_topic, help="0x + 8 hex; repeat")
    p.add_argument("--state-dir", type=Path, required=True, help="where the owner keeps its Codex state")
    p.add_argument("--start", type=int)
    p.add_argument("--end", type=int)
    p.add_argument("--encrypt-key", help="community group key HEX[@TIMESTAMP_MS] (encrypted communities)")
    p.set_defaults(func=cmd_publish)
    p = sub.add_parser("codex-fetch")
    _common(p)
    _reader(p)
    from core.torrent.selection import add_selection_arguments
    add_selection_arguments(p)
    p.set_defaults(func=cmd_fetch)
