"""Table models updated by key (torrent-client style): a row changes in place with a per-row dataChanged;
more than half the rows changing at once becomes one reset. A log appends to a RingTableModel (bounded, O(1)).
Views sort/filter through QSortFilterProxyModel.
Cells that depend on more than their row (a member's choice, a download's progress) are re-checked with
`refresh_cells()`, which tells the views only about the rows whose shown cells changed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from core.archive.inspect import size_text, utc_text

KEY_ROLE = Qt.ItemDataRole.UserRole + 1     # the row's key
SORT_ROLE = Qt.ItemDataRole.UserRole + 2    # raw value for sorting


def fmt_time(ts: int | float | None) -> str:
    return "" if ts is None else utc_text(ts)       # a hostile archive's time that no date can hold: the number


fmt_bytes = size_text     # core.archive.inspect's rule for sizes shown to people

# A member's download policies in words (the codes: core.torrent.selection.MODES), for every view that offers them
POLICY_WORDS = {"all": "All history", "latest": "Only the latest week", "range": "A time range"}


def payload_preview(payload: bytes, n: int = 60) -> str:
    """Printable text if the payload is text, else hex (Status payloads are protobuf, usually opaque)."""
    head = payload[:n]
    try:
        s = head.decode("utf-8")
        if s.isprintable():
            return s
    except UnicodeDecodeError:
        pass
    return head.hex()


def short_id(s: str, n: int = 10) -> str:
    return s if len(s) <= n + 4 else f"{s[:n]}…{s[-4:]}"


ARCHIVE_ID_PREFIX = 12   # an archive ID's characters before the "…" (then its last four), the same in every view


def short_archive_id(archive_id: str) -> str:
    """An archive ID as the log, the member's list, the key box and the Inspector write it, so that one is
    matched with the other by eye."""
    return short_id(archive_id, ARCHIVE_ID_PREFIX)


def author_name(key_hex: str) -> str:
    """The Status three-word name of a public key (hex), as Status shows it; the shortened key when it is not
    a valid key; empty for no key."""
    if not key_hex:
        return ""
    from core.status.alias import AliasError, three_word_name
    try:
        return three_word_name(key_hex)
    except AliasError:
        return short_id(key_hex, 12)


def channel_label(chat_id: str, community_id: str | None = None, names: dict[str, str] | None = None) -> str:
    """A channel as a person knows it: its name (from the community description) when known, else '#' and the
    start of its UUID for a channel of this community, else the chat ID shortened."""
    if not chat_id:
        return ""
    if names and chat_id in names:
        return f"#{names[chat_id]}"
    if community_id and chat_id.lower() == community_id.lower():
        return "(community)"                          # the community's own chat: descriptions, requests to join
    if community_id and chat_id.lower().startswith(community_id.lower()) and len(chat_id) > len(community_id):
        return f"#{chat_id[len(community_id):][:8]}…"
    return short_id(chat_id, 12)


@dataclass(frozen=True)
class Column:
    title: str
    value: Callable[[Any], Any]                       # raw value (sort role)
    text: Callable[[Any], str] | None = None           # display text; default str(value)
    tooltip: Callable[[Any], str | None] | None = None
    align_right: bool = False


class ColumnTableModel(QAbstractTableModel):
    """A table whose cells come from `columns` applied to row objects; subclasses keep the rows (`_row(i)`)."""

    def __init__(self, columns: Sequence[Column], key: Callable[[Any], Hashable], parent=None,
                 foreground: Callable[[Any], Any] | None = None):
        super().__init__(parent)
        self.columns = list(columns)
        self.key = key
        self.foreground = foreground

    def _row(self, i: int) -> Any:
        raise NotImplementedError

    # -- Qt interface --------------------------------------------------------------------------------------
    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section].title
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row, col = self._row(index.row()), self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.text(row) if col.text else _plain(col.value(row))
        if role == SORT_ROLE:
            v = col.value(row)
            return -1 if v is None else v
        if role == KEY_ROLE:
            return self.key(row)
        if role == Qt.ItemDataRole.ToolTipRole and col.tooltip:
            return col.tooltip(row)
        if role == Qt.ItemDataRole.TextAlignmentRole and col.align_right:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and self.foreground:
            return self.foreground(row)
        return None


class KeyedTableModel(ColumnTableModel):
    """Rows are arbitrary objects; `key(row)` identifies them. Update with upsert/remove/replace_all."""

    def __init__(self, columns: Sequence[Column], key: Callable[[Any], Hashable], parent=None,
                 foreground: Callable[[Any], Any] | None = None):
        super().__init__(columns, key, parent, foreground)
        self._rows: list[Any] = []
        self._index: dict[Hashable, int] = {}
        self._cells: dict[Hashable, tuple] | None = None   # key -> cells last told (kept once refresh_cells ran)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def _row(self, i: int) -> Any:
        return self._rows[i]

    def cells(self, row: Any) -> tuple:
        """What a row shows: every column's text, sort value and tooltip."""
        return tuple((c.text(row) if c.text else _plain(c.value(row)), c.value(row),
                      c.tooltip(row) if c.tooltip else None) for c in self.columns)

    def refresh_cells(self) -> int:
        """Tell the views about the rows whose cells changed although their row did not (cells computed from
        state outside the row): one dataChanged per run of such rows, none when nothing changed. Returns the
        number of rows told."""
        first = self._cells is None
        old, self._cells = self._cells or {}, {}
        changed: list[int] = []
        for i, r in enumerate(self._rows):
            k = self.key(r)
            self._cells[k] = now = self.cells(r)
            if not first and old.get(k) != now:
                changed.append(i)
        if first and self._rows:
            changed = list(range(len(self._rows)))
        for lo, hi in _runs(changed):
            self.dataChanged.emit(self.index(lo, 0), self.index(hi, len(self.columns) - 1))
        return len(changed)

    def _remember(self, rows: Sequence[Any]) -> None:
        if self._cells is not None:
            for r in rows:
                self._cells[self.key(r)] = self.cells(r)

    def _told(self, lo: int, hi: int) -> None:
        """dataChanged for rows lo..hi, remembered by refresh_cells (so it does not tell them twice)."""
        self._remember(self._rows[lo:hi + 1])
        self.dataChanged.emit(self.index(lo, 0), self.index(hi, len(self.columns) - 1))

    # -- keyed updates ---------------------------------------------------------------------------------------
    def rows(self) -> list[Any]:
        return list(self._rows)

    def row_of(self, key: Hashable) -> int | None:
        return self._index.get(key)

    def get(self, key: Hashable) -> Any | None:
        i = self._index.get(key)
        return None if i is None else self._rows[i]

    def upsert(self, row: Any) -> None:
        k = self.key(row)
        i = self._index.get(k)
        if i is None:
            n = len(self._rows)
            self.beginInsertRows(QModelIndex(), n, n)
            self._rows.append(row)
            self._index[k] = n
            self._remember([row])
            self.endInsertRows()
        else:
            self._rows[i] = row
            self._told(i, i)

    def append_rows(self, rows: Sequence[Any]) -> None:
        """Add rows with new keys at the end in one insert (a page of a long list); known keys are updated."""
        new = [r for r in rows if self.key(r) not in self._index]
        for r in rows:
            if self.key(r) in self._index:
                self.upsert(r)
        if not new:
            return
        n = len(self._rows)
        self.beginInsertRows(QModelIndex(), n, n + len(new) - 1)
        for i, r in enumerate(new):
            self._rows.append(r)
            self._index[self.key(r)] = n + i
        self._remember(new)
        self.endInsertRows()

    def remove(self, key: Hashable) -> None:
        i = self._index.get(key)
        if i is None:
            return
        self.beginRemoveRows(QModelIndex(), i, i)
        del self._rows[i]
        if self._cells is not None:
            self._cells.pop(key, None)
        self.endRemoveRows()
        self._reindex()

    def replace_all(self, rows: Iterable[Any]) -> None:
        """Apply a full snapshot by key: changed rows get dataChanged, new rows are inserted, gone rows removed.
        When more than half the rows differ, one model reset is cheaper for the view."""
        new = list(rows)
        new_keys = [self.key(r) for r in new]
        same_set = set(new_keys) == set(self._index) and len(new_keys) == len(self._rows)
        if not same_set:
            changed_share = len(set(new_keys) ^ set(self._index)) / max(1, len(new_keys), len(self._rows))
            if changed_share > 0.5 or len(new) > 2 * len(self._rows) + 8:
                self.beginResetModel()
                self._rows = new
                self._reindex()
                if self._cells is not None:
                    self._cells = {}
                    self._remember(new)
                self.endResetModel()
                return
            for k in [k for k in self._index if k not in set(new_keys)]:
                self.remove(k)
            for r in new:
                self.upsert(r)
            return
        changed = sorted(self._index[k] for k, r in zip(new_keys, new) if self._rows[self._index[k]] != r)
        by_key = dict(zip(new_keys, new))
        for i in (range(len(self._rows)) if len(changed) > len(self._rows) / 2 else changed):
            self._rows[i] = by_key[self.key(self._rows[i])]
        if len(changed) > len(self._rows) / 2:
            self._told(0, len(self._rows) - 1)
            return
        for lo, hi in _runs(changed):
            self._told(lo, hi)

    def clear(self) -> None:
        self.beginResetModel()
        self._rows, self._index = [], {}
        if self._cells is not None:
            self._cells = {}
        self.endResetModel()

    def _reindex(self) -> None:
        self._index = {self.key(r): i for i, r in enumerate(self._rows)}


class RingTableModel(ColumnTableModel):
    """An append-only table that keeps the newest `capacity` rows (a log): appending is O(1) amortised. A row is
    added with one beginInsertRows at the end; once `drop` rows beyond `capacity` have gathered, the oldest go in
    one beginRemoveRows from the front, so the views' and proxies' own work for a removal (they renumber the rows
    after it) is shared by `drop` appends. Rows live in a list with a moving head (`_head`): a dropped row's slot
    is cleared at once and the list is compacted when the dead slots outnumber the live rows."""

    def __init__(self, columns: Sequence[Column], key: Callable[[Any], Hashable], capacity: int, parent=None,
                 foreground: Callable[[Any], Any] | None = None, drop: int | None = None):
        super().__init__(columns, key, parent, foreground)
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.drop = max(1, min(capacity, drop if drop is not None else capacity // 50))
        self.dropped = 0                      # rows dropped from the front so far (cleared rows not counted)
        self._buf: list[Any] = []
        self._head = 0

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._buf) - self._head

    def _row(self, i: int) -> Any:
        return self._buf[self._head + i]

    def row(self, i: int) -> Any:
        """The row at position i (0 = the oldest kept; negative counts from the newest)."""
        n = self.rowCount()
        if not -n <= i < n:
            raise IndexError(i)
        return self._buf[self._head + (i % n)]

    def rows(self) -> list[Any]:
        return self._buf[self._head:]

    def append(self, row: Any) -> None:
        n = self.rowCount()
        self.beginInsertRows(QModelIndex(), n, n)
        self._buf.append(row)
        self.endInsertRows()
        if n + 1 >= self.capacity + self.drop:
            self._drop_front(n + 1 - self.capacity)

    def _drop_front(self, k: int) -> None:
        self.beginRemoveRows(QModelIndex(), 0, k - 1)
        head = self._head
        self._buf[head:head + k] = [None] * k          # free the rows now, not all at once at compaction
        self._head = head + k
        if self._head > len(self._buf) - self._head:
            del self._buf[:self._head]
            self._head = 0
        self.dropped += k
        self.endRemoveRows()

    def clear(self) -> None:
        self.beginResetModel()
        self._buf, self._head = [], 0
        self.endResetModel()


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Sorted row numbers -> (first, last) of each run of consecutive rows."""
    out: list[tuple[int, int]] = []
    for i in rows:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _plain(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bytes):
        return "0x" + v.hex()
    return str(v)
