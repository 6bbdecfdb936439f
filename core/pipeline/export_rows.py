"""Executor side of `archivist export`: history rows -> export rows, and the week a message belongs to.

Both sources give rows in core.storage.history.COLUMNS order: a community folder's archives through
core.history_import.read_archive_rows (the importer's own decoding and Status unwrapping), a member history
database straight from `history_messages`. So a folder and the history imported from it export the same rows.

No Spark here (plain functions, unit-tested without a JVM); they run inside the executors' Python workers.
"""
from __future__ import annotations

import datetime as dt
import json
import sqlite3
from typing import Iterable, Iterator

from core.storage.history import COLUMNS

DAY = 24 * 3600
WEEK = 7 * DAY
MONDAY_EPOCH = 4 * DAY          # 1970-01-05, the first Monday after the epoch (a Thursday)

# What the executors hand to Spark. `desc_*` carry the channel names a signed community description gives (the
# driver turns them into the `channel` column); `error` names an archive that could not be read (no message).
INTERNAL_SCHEMA = ("ts BIGINT, week STRING, community_id STRING, chat_id STRING, author STRING, author_name STRING, "
                   "type INT, text STRING, hash STRING, archive_id STRING, desc_clock BIGINT, desc_names STRING, "
                   "error STRING, error_code STRING")
ROW_WIDTH = 14


def week_of(ts: int) -> str:
    """The Monday (UTC) that starts the calendar week of `ts` (seconds), as YYYY-MM-DD: the partition value.
    Calendar weeks, not archive windows: live messages in a history have no window, and a folder and the history
    imported from it must fall into the same partitions."""
    monday = ts - (ts - MONDAY_EPOCH) % WEEK
    return dt.datetime.fromtimestamp(monday - monday % DAY, dt.timezone.utc).strftime("%Y-%m-%d")


def author_name(sender: bytes | None) -> str | None:
    """The three-word name Status shows for the author key; None for anything that is not a public key."""
    if not sender:
        return None
    from core.status.alias import AliasError, three_word_name
    try:
        return three_word_name(sender)
    except AliasError:
        return None


def description_names(community_id: str, message_type: int | None, raw: bytes | None) -> tuple[int, str] | None:
    """(clock, JSON {chat ID: channel name}) when `raw` is a CommunityDescription that the community's own key
    signed (a forged one names nothing); else None. Never raises: the bytes come from the network."""
    from core.status.community_names import COMMUNITY_DESCRIPTION, chat_names, signed_description
    if message_type != COMMUNITY_DESCRIPTION or not raw:
        return None
    try:
        found = signed_description(raw, community_id)
    except Exception:  # noqa: BLE001 - outside data: a bad description just names no channel
        return None
    if found is None:
        return None
    clock, channels = found
    return clock, json.dumps(chat_names(community_id, channels), sort_keys=True)


def export_row(r: tuple) -> tuple:
    """One history row (COLUMNS order) -> one INTERNAL_SCHEMA row."""
    cid, h, ts, _topic, sender, chat_id, _clock, _mid, mtype, text, raw, aid = r
    desc = description_names(cid, mtype, raw)
    return (ts, week_of(ts), cid, chat_id, "0x" + bytes(sender).hex() if sender else None, author_name(sender),
            mtype, text, "0x" + bytes(h).hex(), aid, desc[0] if desc else None, desc[1] if desc else None,
            None, None)


def error_row(archive_id: str, error: str, code: str) -> tuple:
    return (None,) * 9 + (archive_id, None, None, error, code)


def folder_rows(entries: Iterable[tuple], data_path: str, community_id: str, open_archive=None) -> Iterator[tuple]:
    """Executor: archives (archive_id, offset, size, padding, start, end) of one folder -> export rows; a bad
    archive gives one error row instead of its messages."""
    from core.archive.codec import IndexEntry
    from core.history_import import read_archive_rows
    with open(data_path, "rb") as f:
        for aid, offset, size, padding, start, end in entries:
            try:
                rows = read_archive_rows(f, community_id, aid, IndexEntry(start, end, (), offset, size, padding),
                                         open_archive)
            except Exception as e:  # noqa: BLE001 - reported by archive ID on the driver
                yield error_row(aid, str(e), getattr(e, "code", None) or type(e).__name__)
                continue
            yield from (export_row(r) for r in rows)


def history_weeks(con: sqlite3.Connection, community_id: str | None = None) -> list[tuple[str, int, int]]:
    """Driver: (community ID, lo, hi) for every calendar week of a history database that holds messages."""
    where, args = ("WHERE community_id = ?", (community_id,)) if community_id else ("", ())
    days = con.execute(f"SELECT DISTINCT community_id, timestamp / {DAY} FROM history_messages {where}", args)
    weeks = {(cid, d * DAY - (d * DAY - MONDAY_EPOCH) % WEEK) for cid, d in days}
    return [(cid, lo, lo + WEEK) for cid, lo in sorted(weeks)]


def history_rows(weeks: Iterable[tuple[str, int, int]], path: str) -> Iterator[tuple]:
    """Executor: the export rows of some weeks of a member history database (read-only)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for cid, lo, hi in weeks:
            cur = con.execute(f"SELECT {', '.join(COLUMNS)} FROM history_messages "
                              "WHERE community_id = ? AND timestamp >= ? AND timestamp < ?", (cid, lo, hi))
            for r in cur:
                yield export_row(r)
    finally:
        con.close()


def channel_map(descriptions: Iterable[tuple[int, str]]) -> dict[str, str]:
    """{chat ID: channel name} from (clock, JSON names) of the signed descriptions; the newest clock wins."""
    names: dict[str, str] = {}
    for _clock, doc in sorted(descriptions, key=lambda d: d[0]):
        names.update(json.loads(doc))
    return names
