"""The build's bulk encoder: store rows taken a batch at a time, WakuMessage framing computed with array operations.

A batch of rows (waku_messages.scan_rows) becomes columns through C-level passes (zip, map(len), one bytes.join
of the sigs, one bytes.fromhex for all hashes); numpy computes every protobuf tag and varint of the batch at once
and lays them out with the fixed-width columns (sig, topic, hash) as byte matrices whose rows become bytes objects
(`ndarray.tolist()` of fixed-width void rows). A message is then two pieces, the bytes made here and its payload,
and an archive is one bytes.join over its messages' pieces: no Python code runs per message. The bytes are the
protobuf library's: tests/unit/archive/test_columnar.py compares them on random messages and store windows, the
build tests compare whole folders. A batch the bulk path does not take (see rows_to_columns) is read again by
query_messages and encoded by the library, as before.

Memory stays flat: a window is read in batches of about BATCH_BYTES, an archive holds at most one 30 MB chunk.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence, Union

import numpy as np

from core.archive import codec
from core.archive.codec import ArchiveMessage
from core.archive.constants import MAX_ARCHIVE_PAYLOAD
from core.storage import waku_messages

BATCH_ROWS = 4_096          # rows of a window's first batch; later ones aim at BATCH_BYTES of messages (small
BATCH_ROWS_MIN, BATCH_ROWS_MAX = 64, 65_536   # batches stay in the CPU caches: measured faster than 8-32k rows)
BATCH_BYTES = 2 << 20

# A bytes column: one bytes object per row, or (fixed width, the usual hash and topic) an n x width uint8 matrix.
Blobs = Union[Sequence[bytes], np.ndarray]


@dataclass
class Columns:
    """n messages as columns; row i of each is message i."""

    timestamp: np.ndarray   # uint64
    sig: Blobs
    topic: Blobs
    payload: Sequence[bytes]
    padding: Sequence[bytes]
    hash: Blobs
    third_party_id: Sequence[bytes]   # UTF-8

    def __len__(self) -> int:
        return len(self.timestamp)

    @classmethod
    def from_messages(cls, ms: Sequence[ArchiveMessage]) -> "Columns":
        return cls(np.array([m.timestamp for m in ms], dtype=np.uint64), [m.sig for m in ms], [m.topic for m in ms],
                   [m.payload for m in ms], [m.padding for m in ms], [m.hash for m in ms],
                   [m.third_party_id.encode() for m in ms])


def _lengths(col: Blobs, n: int) -> np.ndarray:
    if isinstance(col, np.ndarray):
        return np.full(n, col.shape[1], np.int64)
    if not any(col):   # all empty (padding, third_party_id): no pass over lengths
        return np.zeros(n, np.int64)
    return np.fromiter(map(len, col), np.int64, n)


def _varint(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned LEB128 of each value: (n x width byte matrix, bytes used per row)."""
    v = values.astype(np.uint64, copy=False)
    width = max(1, (int(v.max()).bit_length() + 6) // 7) if len(v) else 1
    used = np.ones(len(v), np.int64)
    for j in range(1, width):
        used += v >= np.uint64(1 << (7 * j))
    out = np.empty((len(v), width), np.uint8)
    for j in range(width):
        low = ((v >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
        out[:, j] = low | ((used > j + 1).astype(np.uint8) << 7)
    return out, used


class Group(NamedTuple):
    """Bytes made here for each row: the first `used[i]` bytes of row i of `mat`."""

    mat: np.ndarray
    used: np.ndarray


def _field(tag: int, values: np.ndarray, present: np.ndarray) -> Group:
    """Tag byte + varint(value) per row, or nothing where not `present` (proto3 leaves empty fields out)."""
    var, used = _varint(values)
    out = np.empty((len(values), 1 + var.shape[1]), np.uint8)
    out[:, 0] = tag
    out[:, 1:] = var
    return Group(out, np.where(present, used + 1, 0))


def _rows(n: int, *groups: Group) -> list[bytes]:
    """Per row, the used bytes of each group one after the other, as a list of n bytes objects made by numpy:
    rows that use the same number of bytes of every group are cut out together as fixed-width void values."""
    varying = [g for g in groups if int(g.used.min()) != int(g.used.max())]
    if not varying:
        return _fixed_rows([g.mat[:, :int(g.used[0])] for g in groups])
    key = np.zeros(n, np.int64)
    for g in varying:   # one number per combination of used widths (each < 16)
        key = key * 16 + g.used
    out = np.empty(n, dtype=object)
    for k in np.unique(key).tolist():
        idx = np.flatnonzero(key == k)
        first = int(idx[0])
        out[idx] = _fixed_rows([g.mat[idx, :int(g.used[first])] for g in groups])
    return out.tolist()


def _fixed_rows(parts: list[np.ndarray]) -> list[bytes]:
    mat = np.hstack(parts) if len(parts) > 1 else np.ascontiguousarray(parts[0])
    width = mat.shape[1]
    return np.ascontiguousarray(mat).view(f"V{width}").ravel().tolist() if width else [b""] * len(mat)


def _fixed(col: np.ndarray) -> Group:
    """A fixed-width bytes column as a Group (always present)."""
    return Group(col, np.full(len(col), col.shape[1], np.int64))


@dataclass
class Encoded:
    """Messages encoded as `k` pieces each, in order. The bytes after a message's last blob (its hash, say) are
    put at the start of the next message's first piece, so that most messages are two pieces: `lead[i]` is how
    many leading bytes of message i's first piece belong to message i - 1, and `tail` is the last message's."""

    pieces: list
    k: int
    lead: np.ndarray
    tail: bytes = b""

    def message(self, i: int) -> list[bytes]:
        """Message i's pieces alone (joined: codec.frame_message of it)."""
        return self.span(i, i + 1)

    def span(self, lo: int, hi: int) -> list[bytes]:
        """The pieces of messages [lo, hi), exactly their bytes."""
        k, lead = self.k, self.lead
        first = self.pieces[lo * k]
        out = [first[int(lead[lo]):] if lead[lo] else first]
        out += self.pieces[lo * k + 1:hi * k]
        end = self.pieces[hi * k][:int(lead[hi])] if hi < len(lead) else self.tail
        if end:
            out.append(end)
        return out


def _shifted(group: Group) -> Group:
    """A group moved one row down: row i holds row i - 1's bytes, row 0 none."""
    mat, used = group
    mat_s, used_s = np.zeros_like(mat), np.zeros_like(used)
    mat_s[1:], used_s[1:] = mat[:-1], used[:-1]
    return Group(mat_s, used_s)


def encode_messages(c: Columns, sig_lengths: np.ndarray | None = None,
                    payload_lengths: np.ndarray | None = None) -> Encoded:
    """Each message framed as an archive's `messages` element: 0x1a, varint(length), the WakuMessage fields 1-7
    in field order, empty ones left out (codec.frame_message's bytes). Lengths of sig and payload may be passed
    if known."""
    n = len(c)
    if not n:
        return Encoded([], 1, np.zeros(0, np.int64))
    ts = c.timestamp.astype(np.uint64, copy=False)
    ls = _lengths(c.sig, n) if sig_lengths is None else sig_lengths
    lp = _lengths(c.payload, n) if payload_lengths is None else payload_lengths
    lt, ld, lh, lx = (_lengths(col, n) for col in (c.topic, c.padding, c.hash, c.third_party_id))
    f_sig, f_ts, f_topic = _field(0x0A, ls, ls > 0), _field(0x10, ts, ts > 0), _field(0x1A, lt, lt > 0)
    f_payload, f_padding = _field(0x22, lp, lp > 0), _field(0x2A, ld, ld > 0)
    f_hash, f_tpid = _field(0x32, lh, lh > 0), _field(0x3A, lx, lx > 0)
    body = ls + lt + lp + ld + lh + lx
    for _, used in (f_sig, f_ts, f_topic, f_payload, f_padding, f_hash, f_tpid):
        body += used
    f_frame = _field(0x1A, body, np.ones(n, bool))

    # a message as segments: byte groups made here (tags, varints, fixed-width columns), or columns of blobs
    segments: list = [f_frame, f_sig]
    for col, after in ((c.sig, [f_ts, f_topic]), (c.topic, [f_payload]), (c.payload, [])):
        segments += [_fixed(col) if isinstance(col, np.ndarray) else col, *after]
    if ld.any():
        segments += [f_padding, c.padding]
    segments += [f_hash, _fixed(c.hash) if isinstance(c.hash, np.ndarray) else c.hash]
    if lx.any():
        segments += [f_tpid, c.third_party_id]
    runs: list[tuple[bool, list]] = []   # (True, groups merged) or (False, a blob column)
    for seg in segments:
        if not isinstance(seg, Group):
            runs.append((False, seg))
        elif runs and runs[-1][0]:
            runs[-1][1].append(seg)
        else:
            runs.append((True, [seg]))
    lead, tail = np.zeros(n, np.int64), b""
    if len(runs) > 2 and runs[-1][0]:   # the last groups go to the start of the next message
        last = runs.pop()[1]
        tail = b"".join(g.mat[-1, :g.used[-1]].tobytes() for g in last)
        shifted = [_shifted(g) for g in last]
        lead = sum(g.used for g in shifted)
        runs[0] = (True, shifted + runs[0][1])
    columns = [_rows(n, *r) if is_groups else r for is_groups, r in runs]
    k = len(columns)
    pieces: list = [b""] * (k * n)
    for j, col in enumerate(columns):
        pieces[j::k] = col
    return Encoded(pieces, k, lead, tail)


def frames(c: Columns) -> list[bytes]:
    """Each message's framed bytes (encode_messages, joined per message)."""
    enc = encode_messages(c)
    return [b"".join(enc.message(i)) for i in range(len(c))]


# -- reading the store -----------------------------------------------------------------------------------------

def _hex_column(values: tuple, width: int) -> tuple[bytes, np.ndarray] | None:
    """"0x"-prefixed hex strings that all spell `width` bytes: (their text without the prefixes, concatenated; the
    bytes they spell as an n x width matrix), or None if any is not such a string."""
    n = len(values)
    raw = "".join(values).encode("ascii")   # TypeError / UnicodeEncodeError: not all ASCII text
    if len(raw) != n * (2 + 2 * width):
        return None
    chars = np.frombuffer(raw, np.uint8).reshape(n, 2 + 2 * width)
    if not (bool(np.all(chars[:, 0] == ord("0"))) and bool(np.all((chars[:, 1] | 0x20) == ord("x")))):
        return None
    text = chars[:, 2:].tobytes()
    out = bytes.fromhex(text.decode("ascii"))   # ValueError: not hex
    if len(out) != n * width:   # fromhex skips whitespace: then it is shorter
        return None
    return text, np.frombuffer(out, np.uint8).reshape(n, width)


def _moved(col: Sequence[bytes], order: np.ndarray, moved: list[int]) -> list[bytes]:
    """col permuted by `order`, which changes only the positions `moved`."""
    out = list(col)
    for i in moved:
        out[i] = col[int(order[i])]
    return out


def rows_to_columns(rows: list[tuple], topics: Sequence[bytes]) -> Columns | None:
    """Rows of waku_messages.scan_rows (whole timestamps) as Columns in archive order (timestamp, then hash as the
    store orders it: as text), with C-level passes over each column. None when a row is not what status-go
    writes (a sig, payload or padding that is not a blob, a hash that is not "0x" hex of one length for all rows,
    a timestamp that is not a non-negative integer, a third_party_id that is not text): query_messages' reading
    takes those rows."""
    n = len(rows)
    widths = {len(t) for t in topics}
    if not n or len(widths) != 1:
        return None
    sig, ts, topic, payload, padding, hashes, tpid = zip(*rows)
    try:
        stamps = np.array(ts)   # int64 only when every value is an int that fits
        if stamps.dtype != np.int64 or int(stamps.min()) < 0:
            return None
        is_bytes = bytes.__instancecheck__
        if not all(map(is_bytes, payload)):
            return None
        if any(padding):
            if not all(map(is_bytes, padding)):
                return None
        else:
            padding = (b"",) * n   # all empty (NULL reads as empty too, as in query_messages)
        sig_raw = b"".join(sig)   # TypeError: not all bytes
        sig_width = len(sig[0])
        if len(sig_raw) == n * sig_width and bool(np.all(np.fromiter(map(len, sig), np.int64, n) == sig_width)):
            sig = np.frombuffer(sig_raw, np.uint8).reshape(n, sig_width)   # one width (65): joins the header
        elif not all(map(is_bytes, sig)):
            return None
        hash_cols = _hex_column(hashes, (len(hashes[0]) - 2) // 2)
        if hash_cols is None:
            return None
        if any(tpid):
            tpids = [(t or "").encode("utf-8") for t in tpid]   # AttributeError: not text
        else:
            tpids = [b""] * n
    except (TypeError, ValueError, AttributeError, UnicodeError, OverflowError):
        return None
    width = widths.pop()
    topic_table = np.frombuffer(b"".join(topics), np.uint8).reshape(len(topics), width)
    topic_idx = np.array(topic, np.int64)
    text, hash_raw = hash_cols
    tie = stamps[1:] == stamps[:-1] if n > 1 else np.zeros(0, bool)
    if tie.any():   # rows of one timestamp: into the store's order, hash text (bytes of the ASCII) ascending
        in_tie = np.zeros(n, bool)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        sub = np.flatnonzero(in_tie)   # runs of equal timestamps, in timestamp order already
        keys = np.frombuffer(text, dtype=f"S{len(text) // n}")[sub] if text else np.zeros(len(sub))
        order = np.arange(n)
        order[sub] = sub[np.lexsort((keys, stamps[sub]))]
        if not bool(np.all(order[1:] > order[:-1])):
            moved = np.flatnonzero(order != np.arange(n)).tolist()   # few: only rows of one second swap
            payload, padding, tpids = (_moved(col, order, moved) for col in (payload, padding, tpids))
            sig = sig[order] if isinstance(sig, np.ndarray) else _moved(sig, order, moved)
            stamps, topic_idx, hash_raw = stamps[order], topic_idx[order], hash_raw[order]
    return Columns(stamps.astype(np.uint64), sig, topic_table[topic_idx], payload, padding, hash_raw, tpids)


@dataclass
class Batch:
    """Messages in archive order: chunk sizes (len(payload) + len(sig)) and their encoding."""

    sizes: np.ndarray
    enc: Encoded


def _take(col: Blobs, idx: np.ndarray) -> Blobs:
    return col[idx] if isinstance(col, np.ndarray) else [col[i] for i in idx.tolist()]


def _batch(con: sqlite3.Connection, topics: Sequence[bytes], rows: list[tuple], cap: int) -> Batch:
    """A batch of rows (whole timestamps) encoded in archive order, messages over `cap` left out as status-go
    does."""
    cols = rows_to_columns(rows, topics)
    if cols is None:   # the reference reading of the same rows (all of their timestamps) and the protobuf library
        ms = [m for m in waku_messages.query_messages_through(con, topics, rows[0][1], rows[-1][1])
              if m.chunk_size <= cap]
        return Batch(np.array([m.chunk_size for m in ms], np.int64),
                     Encoded([codec.frame_message(m) for m in ms], 1, np.zeros(len(ms), np.int64)))
    cols, ls, lp = within_cap(cols, cap)
    return Batch(ls + lp, encode_messages(cols, ls, lp))


def within_cap(cols: Columns, cap: int) -> tuple[Columns, np.ndarray, np.ndarray]:
    """The messages of `cols` whose len(sig) + len(payload) is within `cap` (status-go leaves the others out),
    with those two lengths."""
    n = len(cols)
    ls, lp = _lengths(cols.sig, n), _lengths(cols.payload, n)
    keep = ls + lp <= cap
    if not bool(keep.all()):
        idx = np.flatnonzero(keep)
        cols = Columns(cols.timestamp[idx], *(_take(col, idx) for col in (
            cols.sig, cols.topic, cols.payload, cols.padding, cols.hash, cols.third_party_id)))
        ls, lp = ls[idx], lp[idx]
    return cols, ls, lp


def window_batches(con: sqlite3.Connection, topics: Sequence[bytes], lo: int, hi: int,
                   cap: int = MAX_ARCHIVE_PAYLOAD) -> Iterator[Batch]:
    """The window's messages in archive order, in batches of about BATCH_BYTES. Rows come in timestamp order
    (scan_rows); the rows of a batch's last timestamp wait for the next batch, so that each batch holds whole
    timestamps and can be put in (timestamp, hash) order on its own."""
    if not topics:
        return
    size = [BATCH_ROWS]
    for rows in whole_timestamps(waku_messages.scan_rows(con, topics, lo, hi), lambda: size[0]):
        batch = _batch(con, topics, rows, cap)
        yield batch
        per_row = max(1, (int(batch.sizes.sum()) + 128 * len(rows)) // len(rows))
        size[0] = int(min(BATCH_ROWS_MAX, max(BATCH_ROWS_MIN, BATCH_BYTES // per_row)))


def whole_timestamps(cur: sqlite3.Cursor, size: Callable[[], int]) -> Iterator[list[tuple]]:
    """Rows in timestamp order (column 1) in batches of `size()` rows or so, each batch holding whole timestamps:
    the rows of a batch's last timestamp wait for the next batch (all of them, if that is the batch)."""
    rows: list = []
    while True:
        more = cur.fetchmany(size())
        rows = rows + more if rows else more
        if not rows:
            return
        carry: list = []
        if more:
            last, k = rows[-1][1], len(rows) - 1
            while k > 0 and rows[k - 1][1] == last:
                k -= 1
            if k == 0:
                continue
            rows, carry = rows[:k], rows[k:]
        yield rows
        rows = carry


class Chunker:
    """status-go's 30 MB cut (partition.chunk_messages) over batches: a chunk takes messages while their summed
    size stays within `cap`. A chunk is a list of piece lists (slices of the batches' pieces)."""

    def __init__(self, cap: int = MAX_ARCHIVE_PAYLOAD):
        self.cap = cap
        self.parts: list[list] = []
        self.size = 0
        self.count = 0

    def feed(self, batch: Batch) -> Iterator[tuple[list[list], int]]:
        """Add a batch (every size <= cap); yields each chunk that it closes as (piece lists, message count)."""
        cum = np.cumsum(batch.sizes)
        start, base, n = 0, 0, len(batch.sizes)
        while start < n:
            end = int(np.searchsorted(cum, base + self.cap - self.size, side="right"))
            if end > start:
                self.parts.append(batch.enc.span(start, end))
                self.count += end - start
                self.size += int(cum[end - 1]) - base
                base, start = int(cum[end - 1]), end
            elif not self.count:
                raise ValueError(f"a message of {int(batch.sizes[start])} bytes is over the {self.cap}-byte cap")
            if start < n:   # the next message does not fit: close this chunk
                yield self.take()

    def take(self) -> tuple[list[list], int]:
        out = (self.parts, self.count)
        self.parts, self.size, self.count = [], 0, 0
        return out


def _archive(header: bytes, parts: list[list[bytes]]) -> bytes:
    pieces = [header]
    for p in parts:
        pieces += p
    return b"".join(pieces)   # one copy of the bytes


def encode_window(con: sqlite3.Connection, topics: Sequence[bytes], lo: int, hi: int,
                  cap: int = MAX_ARCHIVE_PAYLOAD) -> Iterator[tuple[bytes, int]]:
    """(unpadded archive bytes, message count) per non-empty chunk of [lo, hi): codec.encode_archive of each
    chunk_messages chunk of query_messages, byte for byte."""
    return encode_batches(window_batches(con, topics, lo, hi, cap), lo, hi, topics, cap)


def encode_batches(batches: Iterable[Batch], lo: int, hi: int, topics: Sequence[bytes],
                   cap: int = MAX_ARCHIVE_PAYLOAD) -> Iterator[tuple[bytes, int]]:
    """encode_window over batches of one window's messages in archive order, each message within `cap` (also
    those of a Spark stage folder: core/pipeline/stage.py)."""
    header = codec.archive_header(lo, hi, topics)
    chunker = Chunker(cap)
    for batch in batches:
        for parts, count in chunker.feed(batch):
            yield _archive(header, parts), count
    if chunker.count:
        parts, count = chunker.take()
        yield _archive(header, parts), count
