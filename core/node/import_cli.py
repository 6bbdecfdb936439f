"""`archivist import FOLDER --history DB`: a downloaded community folder into a member history database.

The folder may come from us or from any BitTorrent client. The selection (core.torrent.selection), the plan
(core.history_import) and the per-window write (core.node.hydrate.reference_hydrator) are the member node's own,
so the command and the node always agree. Running it again imports only what is missing.
Exit codes: 0 all chosen archives imported, 1 some could not be (named, the rest imported), 2 unusable input.
"""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from core.archive.constants import COMMUNITY_ID, community_id_arg
from core.archive.errors import ArchiveError
from core.history_import import ImportResult
from core.storage.history import HistoryWriteError


class ImportUsageError(Exception):
    """The folder, index or arguments cannot be used at all (exit 2)."""


def open_folder_index(folder: Path, store=None):
    """{archive_id: IndexEntry} of a downloaded folder, checked before it is trusted (ImportUsageError if not).

    `data` may be shorter than the index says or sparse (a partial download): archives whose bytes are missing
    fail one by one when read; every other fault of the index refuses the whole import."""
    from core.archive import codec
    from core.archive.constants import DATA_FILE, INDEX_FILE
    from core.archive.index_check import check_entries, errors
    from core.archive.inspect import read_index
    from core.status.archive_encryption import is_encrypted, open_index_bytes
    index_path, data_path = folder / INDEX_FILE, folder / DATA_FILE
    if not folder.is_dir() or not index_path.is_file() or not data_path.is_file():
        raise ImportUsageError(f"{folder} is not a downloaded archive folder (it needs `index` and `data`)")
    try:
        raw = read_index(index_path)
    except ArchiveError as e:
        raise ImportUsageError(f"{index_path}: {e}") from None
    try:
        index = codec.decode_index(open_index_bytes(raw, store))
    except Exception as e:  # noqa: BLE001 - DecodeError, KeyMissing, TamperedContent: the index cannot be opened
        hint = " (the index is encrypted: pass the community's key with --key)" if is_encrypted(raw) else ""
        raise ImportUsageError(f"{index_path}: {e}{hint}") from None
    faults = [f for f in errors(check_entries(index, data_path.stat().st_size)) if f.code != "index-past-data"]
    if faults:
        raise ImportUsageError(f"{index_path}: {faults[0].code}: {faults[0].message}"
                               + (f" (and {len(faults) - 1} more)" if len(faults) > 1 else "")
                               + "; nothing imported (run `archivist verify` on the folder)")
    return index


def import_folder(folder: Path | str, history_db: Path | str, community_id: str, selection, *, keys=(),
                  progress=None, authors_progress=None, defer_authors: bool = True,
                  read_ahead: bool | None = None) -> ImportResult:
    """Import the archives `selection` picks from `folder` into `history_db`, one window per transaction, then
    fill in the authors (and any an interrupted run left pending): authors_progress(done, total), first (0, n)
    once every window is visible. `defer_authors=False` writes each row whole in its window's transaction;
    `read_ahead` as core.node.hydrate.reference_hydrator's (None: when it pays)."""
    from core.history_import import ImportResult, plan_import
    from core.node.hydrate import reference_hydrator
    from core.status.archive_encryption import key_store, open_archive_bytes
    from core.storage.member_history import MemberHistory
    folder = Path(folder)
    store = key_store(keys, community_id)
    index = open_folder_index(folder, store)
    chosen = selection.choose(index)
    history = MemberHistory(history_db)
    try:
        done = history.imported_archive_ids(community_id)
        plan = plan_import(index, chosen, done)
        rep = ImportResult(community_id, chosen=len(chosen), already_imported=sum(1 for a in chosen if a in done))
        hydrate = reference_hydrator(history, unwrap=lambda raw: open_archive_bytes(raw, store),
                                     defer_authors=defer_authors, read_ahead=read_ahead)
        rest = bytes_left(index, plan)
        for i, w in enumerate(plan):
            if progress is not None:
                progress(i, len(plan), w)
            if i + 1 < len(plan):               # the next window is read while this one is written (if it pays)
                hydrate.prepare(community_id, folder, {a: index[a] for a in plan[i + 1].archive_ids}, rest[i + 1])
            try:
                rep.messages += hydrate(community_id, folder, {a: index[a] for a in w.archive_ids})
            except HistoryWriteError:
                raise                  # disk full / I/O error: stop; what was imported stays, a rerun continues
            except Exception as e:  # noqa: BLE001 - ArchiveError, KeyMissing, TamperedContent: name it, go on
                for a in w.archive_ids:
                    rep.failed[a] = f"{getattr(e, 'code', type(e).__name__)}: {e}"
                continue
            rep.imported_archive_ids.extend(w.archive_ids)
            rep.windows += 1
        hydrate.finish_authors(community_id, authors_progress)     # HistoryWriteError: the rest stays pending
        return rep
    finally:
        history.close()


def bytes_left(index, plan) -> list[int]:
    """For each window of `plan`, the bytes of its archives and of every later window's (what hydrate.prepare
    weighs against the worker pool's start)."""
    rest = [sum(index[a].size for a in w.archive_ids) for w in plan]
    for i in range(len(rest) - 2, -1, -1):
        rest[i] += rest[i + 1]
    return rest


def cmd_import(a) -> int:
    from core.cli import print_json
    from core.torrent.selection import selection_from_args
    folder = Path(a.folder)
    cid = a.community_id or folder.resolve().name.lower()
    try:
        if not COMMUNITY_ID.match(cid):       # the folder's name (--community-id is checked by argparse)
            raise ImportUsageError(f"{cid!r} is not a community ID (0x + 66 hex digits): name it with --community-id")
        rep = import_folder(folder, a.history, cid, selection_from_args(a), keys=a.key or ())
    except (ImportUsageError, ValueError, ArchiveError, OSError, HistoryWriteError, sqlite3.Error) as e:
        print(f"archivist import: {e}", file=sys.stderr)
        return 2
    if a.json:
        print_json(rep.to_json())
    else:
        print(f"imported {len(rep.imported_archive_ids)} archives ({rep.windows} windows), {rep.messages} messages; "
              f"{rep.already_imported} of {rep.chosen} chosen archives were already imported")
        for aid, why in rep.failed.items():
            print(f"  not imported {aid}: {why}")
    return 1 if rep.failed else 0


def register(sub) -> None:
    from core.torrent.selection import add_selection_arguments
    p = sub.add_parser("import")
    p.add_argument("folder", help="folder with `data` and `index` (downloaded by us or any BitTorrent client)")
    p.add_argument("--history", required=True, help="member history SQLite file (created if missing)")
    p.add_argument("--community-id", type=community_id_arg, help="0x + 66 hex (default: the folder's name)")
    add_selection_arguments(p)
    p.add_argument("--key", action="append", help="community group key HEX[@TIMESTAMP_MS] (encrypted; repeat)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_import)
