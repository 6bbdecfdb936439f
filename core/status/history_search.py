"""Full-text search over a member's whole history (SQLite FTS5), kept beside `history_messages`.

Its own tables, created on open, in the history database: `history_search_docs` gives each message (community,
Waku hash) a stable document ID, `history_search_fts` (FTS5) holds that document's text and its author (three-word
name and key), `history_search_state` the highest `history_messages` rowid already indexed.

Indexing is a catch-up, not triggers (the importer, the Spark hydrate job and live messages all write
`history_messages`, and none of them should pay for search): rows with a rowid above the watermark are indexed in
short transactions. An upsert (`INSERT OR REPLACE`, as every re-import does) gives the row a new rowid above the
watermark, so it is indexed again, under the same document ID (same community and hash), replacing the old entry.
If `history_messages` ever holds more rows than there are documents (a rowid reused below the watermark), one full
pass indexes what is missing. This module only reads `history_messages`: it never writes, alters or deletes a
message. Searching joins back to `history_messages`, so what is shown is always the stored row.
"""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from core.status.alias import AliasError, three_word_name
from core.storage import history as H
from core.storage.member_history import history_row, row_columns

SCHEMA = """
CREATE TABLE IF NOT EXISTS history_search_docs (
  docid INTEGER PRIMARY KEY,
  community_id TEXT NOT NULL,
  hash BLOB NOT NULL,
  UNIQUE (community_id, hash)
);
CREATE VIRTUAL TABLE IF NOT EXISTS history_search_fts USING fts5(body, author,
  tokenize = 'unicode61 remove_diacritics 2');
-- 'rowid': the highest history_messages rowid indexed, and which message had it (to notice a reused rowid)
CREATE TABLE IF NOT EXISTS history_search_state (name TEXT PRIMARY KEY, value INTEGER NOT NULL, community_id TEXT,
  hash BLOB);
"""
BATCH = 2000          # rows per indexing transaction: the importer never waits long for the write lock


def has_fts5() -> bool:
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        con.close()


def author_terms(sender: bytes | None) -> str:
    """What a search for the author matches: the three-word name and the key's hex."""
    if not sender:
        return ""
    try:
        return f"{three_word_name(sender)} {bytes(sender).hex()}"
    except AliasError:
        return bytes(sender).hex()


def fts_query(text: str) -> str | None:
    """A person's words -> an FTS5 query: every word must occur, each as a prefix ("hel wor" finds "hello
    world"). Words are quoted, so no input is FTS5 syntax and none raises a syntax error. None when empty."""
    words = [w.replace('"', '""') for w in text.split()]
    return " ".join(f'"{w}"*' for w in words if w.strip('"')) or None


class HistorySearch:
    """One connection of its own to the history database (WAL: reading beside the importer), safe to call from
    any worker thread. Every query first indexes what is new."""

    def __init__(self, path: Path | str, *, batch: int = BATCH):
        self.path, self.batch = Path(path), batch
        self._con = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10.0)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.executescript(H.SCHEMA)      # CREATE IF NOT EXISTS: a no-op on an existing history database
        self._con.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._con.close()

    # -- indexing ------------------------------------------------------------------------------------------
    def _watermark(self) -> tuple[int, str | None, bytes | None]:
        row = self._con.execute("SELECT value, community_id, hash FROM history_search_state "
                                "WHERE name = 'rowid'").fetchone()
        return (row[0], row[1], row[2]) if row else (0, None, None)

    def _watermark_moved(self) -> bool:
        """True when the row at the watermark is no longer the message indexed there: rows were deleted at the top
        and their rowids reused, so rows below the watermark may be unindexed."""
        rowid, cid, h = self._watermark()
        if not rowid:
            return False
        now = self._con.execute("SELECT community_id, hash FROM history_messages WHERE rowid = ?", (rowid,)).fetchone()
        return now is None or (now[0], bytes(now[1])) != (cid, bytes(h or b""))

    def _index(self, rows: list[tuple], watermark: tuple | None) -> None:
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            for _rowid, cid, h, text, sender in rows:
                doc = con.execute("SELECT docid FROM history_search_docs WHERE community_id = ? AND hash = ?",
                                  (cid, h)).fetchone()
                if doc is None:
                    docid = con.execute("INSERT INTO history_search_docs (community_id, hash) VALUES (?, ?)",
                                        (cid, h)).lastrowid
                else:
                    docid = doc[0]
                con.execute("DELETE FROM history_search_fts WHERE rowid = ?", (docid,))   # the old text, if any
                con.execute("INSERT INTO history_search_fts (rowid, body, author) VALUES (?, ?, ?)",
                            (docid, text or "", author_terms(sender)))
            if watermark is not None:
                con.execute("INSERT OR REPLACE INTO history_search_state (name, value, community_id, hash) "
                            "VALUES ('rowid', ?, ?, ?)", watermark)
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    def catch_up(self) -> int:
        """Index every row not indexed yet. Returns how many rows were (re)indexed."""
        with self._lock:
            return self._catch_up()

    def _catch_up(self) -> int:
        done = 0
        full = self._watermark_moved()
        while True:
            rows = self._con.execute(
                "SELECT rowid, community_id, hash, text, sender FROM history_messages WHERE rowid > ? "
                "ORDER BY rowid LIMIT ?", (self._watermark()[0], self.batch)).fetchall()
            if not rows:
                break
            self._index(rows, rows[-1][:3])
            done += len(rows)
        n_rows = self._con.execute("SELECT COUNT(*) FROM history_messages").fetchone()[0]
        n_docs = self._con.execute("SELECT COUNT(*) FROM history_search_docs").fetchone()[0]
        if full or n_rows > n_docs:          # rows below the watermark that were never indexed: find them once
            missing = self._con.execute(
                "SELECT m.rowid, m.community_id, m.hash, m.text, m.sender FROM history_messages m "
                "LEFT JOIN history_search_docs d ON d.community_id = m.community_id AND d.hash = m.hash "
                "WHERE d.docid IS NULL").fetchall()
            for i in range(0, len(missing), self.batch):
                self._index(missing[i:i + self.batch], None)
            done += len(missing)
        return done

    # -- queries -------------------------------------------------------------------------------------------
    def search(self, cid: str, text: str, chat_id: str | None = None, limit: int = 500,
               offset: int = 0) -> list[dict]:
        """The community's messages whose text or author matches every word of `text`, oldest first."""
        where, args = self._match(cid, text, chat_id)
        if where is None:
            return []
        with self._lock:
            self._catch_up()
            columns, join = row_columns(self._con)
            rows = self._con.execute(
                f"SELECT {columns} FROM history_search_fts f CROSS JOIN history_search_docs d ON d.docid = f.rowid "
                f"CROSS JOIN history_messages m ON m.community_id = d.community_id AND m.hash = d.hash{join} "
                f"WHERE {where} ORDER BY m.timestamp, m.hash LIMIT ? OFFSET ?", (*args, limit, offset)).fetchall()
        return [history_row(r) for r in rows]

    def count(self, cid: str, text: str, chat_id: str | None = None) -> int:
        where, args = self._match(cid, text, chat_id)
        if where is None:
            return 0
        with self._lock:
            self._catch_up()
            return self._con.execute(
                "SELECT COUNT(*) FROM history_search_fts f CROSS JOIN history_search_docs d ON d.docid = f.rowid "
                f"CROSS JOIN history_messages m ON m.community_id = d.community_id AND m.hash = d.hash WHERE {where}",
                args).fetchone()[0]

    @staticmethod
    def _match(cid: str, text: str, chat_id: str | None) -> tuple[str | None, tuple]:
        q = fts_query(text)
        if q is None:
            return None, ()
        where, args = "history_search_fts MATCH ? AND d.community_id = ?", (q, cid)
        if chat_id:
            where, args = where + " AND m.chat_id = ?", (*args, chat_id)
        return where, args

    def channel_names(self, cid: str, newest: int = 20) -> dict[str, str]:
        """{chat ID: channel name} from the community descriptions in the history that the community key signed
        (the newest `newest` of them; a later description's name wins). Unsigned, forged or undecodable ones
        are skipped."""
        from core.status.community_names import COMMUNITY_DESCRIPTION, chat_names, signed_description
        from core.status.errors import StatusError
        with self._lock:
            rows = self._con.execute(
                "SELECT raw_payload FROM history_messages WHERE community_id = ? AND message_type = ? "
                "ORDER BY timestamp DESC LIMIT ?", (cid, COMMUNITY_DESCRIPTION, newest)).fetchall()
        found: list[tuple[int, dict[str, str]]] = []
        for (raw,) in rows:
            try:
                description = signed_description(raw, cid)         # None: not the community's own description
            except (StatusError, ValueError):
                continue
            if description is not None:
                found.append(description)
        names: dict[str, str] = {}
        for _clock, chans in sorted(found, key=lambda c: c[0]):
            names.update(chat_names(cid, chans))
        return names
