"""`archivist export FOLDER|HISTORY --format parquet|jsonl --out DIR`: messages for Spark SQL, DuckDB or pandas.

Runs on the same Spark session machinery as spark-build (local mode, or a cluster with --master and the cluster
flags). docs/PIPELINE.md "Export" has the columns, the layout and query examples.
"""
from __future__ import annotations

import sys

from core.archive.constants import community_id_arg
from core.pipeline.cli import NOTHING_WRITTEN, _owner, add_spark_arguments, run_job


def cmd_export(a) -> int:
    from core.archive.errors import ArchiveError
    from core.cli import print_json
    from core.pipeline.export import ExportError, check_output, folder_community_id, source_kind, submit_export
    try:      # everything that can be refused is refused before a JVM starts (exit 2)
        kind = source_kind(a.source)
        check_output(a.out, a.overwrite)
        store = None
        if kind == "folder" and (a.key or a.key_store):
            store = _store(a, folder_community_id(a.source, a.community_id))
        owner = _owner(a, "export")
    except (ExportError, ArchiveError, ValueError) as e:   # SparkSecurityError is a ValueError
        print(f"archivist export: {e}", file=sys.stderr)
        return 2
    code, res = run_job("export", owner, lambda: submit_export(
        owner, a.source, a.out, fmt=a.format, community_id=a.community_id, store=store, overwrite=a.overwrite,
        downloaded_only=a.downloaded_only), a.progress, (ExportError,), failed_note=NOTHING_WRITTEN,
        cancelled_note=NOTHING_WRITTEN)
    if code:
        return code
    if a.json:
        print_json(res.to_json())
    else:
        print(f"exported {res.messages} messages in {len(res.weeks)} weeks to {res.out} ({res.format})")
    return 0


def _store(a, community_id: str):
    """The group keys: --key-store (a node's group-keys.json, read only) and/or --key HEX[@TS]."""
    from pathlib import Path
    from core.status.archive_encryption import GroupKeyStore, key_store
    from core.status.identity import community_id_bytes
    store = key_store(a.key, community_id) or GroupKeyStore()
    if a.key_store:
        if not Path(a.key_store).is_file():
            raise ValueError(f"key store {a.key_store} does not exist")
        for k in GroupKeyStore(a.key_store).keys_of(community_id_bytes(community_id)):
            store.add(k)          # copied into the in-memory store: the node's file is never written
    return store


def register(sub) -> None:
    p = sub.add_parser("export")
    p.add_argument("source", metavar="FOLDER|HISTORY",
                   help="community archive folder (`data` + `index`) or member history SQLite file")
    p.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    p.add_argument("--out", required=True, help="output folder (must be empty or absent unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder (once complete)")
    p.add_argument("--community-id", type=community_id_arg,
                   help="folder: the community (default: the folder's name); history: export "
                   "only this community (default: all)")
    p.add_argument("--key", action="append", help="community group key HEX[@TIMESTAMP_MS] (encrypted; repeat)")
    p.add_argument("--key-store", metavar="FILE", help="group keys file (a node's group-keys.json; read only)")
    p.add_argument("--downloaded-only", action="store_true",
                   help="folder: skip archives that are not downloaded (default: fail naming them)")
    add_spark_arguments(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_export)
