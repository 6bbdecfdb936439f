"""`archivist build`: archives from a status-go `waku_messages` table, hash-ratchet encrypted with `--encrypt-key`.

It lives in the Status layer, not in core/archive, because `--encrypt-key` needs the Status layer's archive
encryption and core/archive sits below core/status (no upward imports, tests/unit/test_layering.py). Its
arguments are core.archive.cli.add_build_arguments, which `spark-build` shares; `encrypt_transform` is shared too.
"""
from __future__ import annotations

import sys

from core.archive.cli import add_build_arguments, print_build_result


def encrypt_transform(a):
    """--encrypt-key KEY[@TIMESTAMP_MS]: hash-ratchet encryption of each archive (encrypted communities)."""
    if not a.encrypt_key:
        return None
    from core.status.archive_encryption import transform_from_cli
    return transform_from_cli(a.encrypt_key, a.community_id)


def cmd_build(a) -> int:
    from core.archive.build import build_archives
    from core.archive.errors import ArchiveError
    try:
        res = build_archives(a.db, a.community_id, a.topic, a.data_dir, a.torrent_dir, start=a.start, end=a.end,
                             trackers=a.tracker or [], transform=encrypt_transform(a))
    except (ArchiveError, FileNotFoundError) as e:
        print(f"archivist build: {e}", file=sys.stderr)
        return 2
    print_build_result(res, a.json)
    return 0


def register(sub) -> None:
    p = sub.add_parser("build")
    add_build_arguments(p)
    p.set_defaults(func=cmd_build)
