"""The member's history database, as the engine and the window use it.

One schema for the whole project: `core/storage/history.py` (the Spark hydrate job writes the same tables), whose
archive bookkeeping tables are core/storage/archive_state.py's.
This class adds what an application needs around it: a lock for the one connection shared by the engine's
threads, live messages, and rows as dicts for the History view.
"""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Iterable, Sequence

from core.storage import history as H


def _hex(b: bytes | None) -> str:
    return "0x" + bytes(b).hex() if b else ""


def row_columns(con: sqlite3.Connection) -> tuple[str, str]:
    """(columns, join) that select a history row as history_row reads it, from `history_messages m`: the browser's
    and the search's one definition (the search's own copy lacked whether the author is still pending)."""
    if H.has_pending_table(con):
        return (_COLUMNS + ", p.rid IS NOT NULL",
                " LEFT JOIN history_authors_pending p ON p.rid = m.rowid AND p.hash = m.hash")
    return _COLUMNS + ", 0", ""


_COLUMNS = "m.hash, m.chat_id, m.topic, m.timestamp, m.clock, m.sender, m.text, m.message_type, m.archive_id"


def history_row(r: Sequence) -> dict:
    """A row of row_columns as the History view shows it."""
    h, chat, topic, ts, clock, sender, text, mtype, aid, waiting = r
    return {"id": _hex(h), "chat_id": chat or "", "topic": _hex(topic), "timestamp": ts, "clock": clock or 0,
            "author": _hex(sender), "text": text or "", "app_type": mtype if mtype is not None else -1,
            "source": "archive" if aid else "live", "archive_id": aid or "", "author_pending": bool(waiting)}


class MemberHistory:
    def __init__(self, path: Path | str):
        # the schema and pragmas of history.connect, on a connection the engine's threads share under a lock
        self.path = Path(path)
        self._con = H.configure(sqlite3.connect(str(path), isolation_level=None, check_same_thread=False))
        self._lock = threading.Lock()
        self._importing = False

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def import_window(self, cid: str, start: int, end: int, rows: Iterable[Sequence],
                      archive_ids: Sequence[str] = (), pending: Iterable[bytes] = ()) -> int:
        """One window's archives, atomically (core.storage.history.import_window: upsert by hash, no delete;
        `pending`: hashes whose author fill_authors writes later)."""
        rows, pending = list(rows), list(pending)
        with self._lock:
            if not self._importing:          # until end_import: a larger cache, rarer checkpoints
                H.import_mode(self._con, True)
                self._importing = True
            return H.import_window(self._con, cid, start, end, rows, archive_ids, pending)

    def end_import(self) -> None:
        """The import's windows are written: the chat index again (made by whichever connection ends the import),
        the connection's usual cache and checkpoints (core.storage.history.import_mode)."""
        with self._lock:
            self._importing = False
            H.import_mode(self._con, False)

    def pending_authors(self, cid: str, limit: int, after: int = 0) -> list[tuple]:
        with self._lock:
            return H.pending_authors(self._con, cid, limit, after)

    def pending_author_count(self, cid: str) -> int:
        with self._lock:
            return H.pending_author_count(self._con, cid)

    def fill_authors(self, cid: str, opened: Sequence[tuple]) -> int:
        """One batch of recovered authors, atomically (core.storage.history.fill_authors)."""
        with self._lock:
            return H.fill_authors(self._con, cid, opened)

    def imported_archive_ids(self, cid: str) -> set[str]:
        with self._lock:
            return H.imported_archive_ids(self._con, cid)

    def add_live(self, cid: str, rows: Iterable[Sequence]) -> None:
        """Messages received live (not from an archive): archive_id stays NULL; an archive's copy of the same message
        (same hash) replaces them later, and those no archive holds are kept."""
        with self._lock:
            self._con.execute("BEGIN")
            self._con.executemany(H._INSERT.replace("INSERT OR REPLACE", "INSERT OR IGNORE"), list(rows))
            self._con.execute("COMMIT")

    def messages(self, cid: str, start: int | None = None, end: int | None = None, chat_id: str | None = None,
                 limit: int = 1000, offset: int = 0) -> list[dict]:
        """A page of the history in time order; `author_pending` marks rows whose author the import's second pass
        has not filled in yet (core.history_import.finish_authors)."""
        args: list = [cid]
        where = ""
        for cond, val in (("m.timestamp >= ?", start), ("m.timestamp < ?", end), ("m.chat_id = ?", chat_id)):
            if val is not None:
                where += " AND " + cond
                args.append(val)
        args += [limit, offset]
        with self._lock:
            columns, join = row_columns(self._con)
            sql = (f"SELECT {columns} FROM history_messages m{join} WHERE m.community_id = ?{where} "
                   "ORDER BY m.timestamp, m.hash LIMIT ? OFFSET ?")
            rows = self._con.execute(sql, args).fetchall()
        return [history_row(r) for r in rows]

    def count(self, cid: str) -> int:
        with self._lock:
            return self._con.execute("SELECT COUNT(*) FROM history_messages WHERE community_id = ?",
                                     (cid,)).fetchone()[0]
