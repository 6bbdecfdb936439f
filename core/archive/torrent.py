"""BitTorrent v1 metainfo for an archive folder, and the magnet link (WIRE-FORMAT.md section 3).

libtorrent's create_torrent refuses 102400-byte pieces, so the metainfo is built here: bencoding via fastbencode,
SHA-1 per piece over `data || index`. `parse_metainfo` validates a torrent from outside before anything is written.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence
from urllib.parse import quote

import fastbencode

from core.archive.constants import DATA_FILE, INDEX_FILE, MAX_INDEX_BYTES, PIECE_LENGTH
from core.archive.errors import InvalidTorrent

MAX_METAINFO_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 1 << 40          # 1 TiB: far above any community history; refuses absurd sizes
# a torrent's shape before fastbencode builds it (16 MiB of "l" took ~4 CPU-s and ~1 GB): libtorrent's own load
# limits are 100 levels and 3M tokens; a status torrent (two files, its trackers) is 5 levels and a few dozen values
MAX_BENCODE_DEPTH = 100
MAX_BENCODE_VALUES = 100_000


@dataclass(frozen=True, slots=True)
class TorrentFile:
    path: str
    length: int


@dataclass(frozen=True, slots=True)
class Metainfo:
    name: str
    piece_length: int
    pieces: bytes            # concatenated 20-byte SHA-1 digests
    files: tuple[TorrentFile, ...]
    trackers: tuple[str, ...]
    info_bytes: bytes        # the bencoded info dict as it appeared
    raw: bytes               # the whole .torrent

    @property
    def infohash(self) -> str:
        return hashlib.sha1(self.info_bytes).hexdigest()

    @property
    def num_pieces(self) -> int:
        return len(self.pieces) // 20

    def piece_hash(self, i: int) -> bytes:
        return self.pieces[20 * i:20 * i + 20]

    @property
    def total_length(self) -> int:
        return sum(f.length for f in self.files)

    def file_length(self, name: str) -> int:
        return next(f.length for f in self.files if f.path == name)

    def magnet(self) -> str:
        return magnet_link(self.infohash, self.name, self.trackers)


def piece_hashes(chunks: Iterable[bytes], piece_length: int = PIECE_LENGTH) -> bytes:
    """SHA-1 of each piece over the concatenation of `chunks` (files in torrent order)."""
    out = bytearray()
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) >= piece_length:
            n = len(buf) // piece_length * piece_length
            mv = memoryview(buf)
            for i in range(0, n, piece_length):
                out += hashlib.sha1(mv[i:i + piece_length]).digest()
            mv.release()
            del buf[:n]
    if buf:
        out += hashlib.sha1(buf).digest()
    return bytes(out)


def archive_piece_hashes(raw: bytes | memoryview, padding: int, piece_length: int = PIECE_LENGTH) -> bytes:
    """The piece hashes of one archive as it lies in `data`: `raw`, then `padding` zero bytes. Every archive starts
    on a piece boundary and fills whole pieces (codec.padded_size), so its pieces hash alone, wherever it lands:
    `data`'s pieces are its archives' pieces in order (the Spark build hashes each archive in the executor that
    encoded it). Equal to piece_hashes([raw, bytes(padding)]), without the copy."""
    if (len(raw) + padding) % piece_length:
        raise ValueError(f"{len(raw)} + {padding} bytes is not a whole number of {piece_length}-byte pieces")
    sha1 = hashlib.sha1
    out = bytearray()
    mv = memoryview(raw).cast("B")
    full = len(mv) // piece_length * piece_length
    for i in range(0, full, piece_length):
        out += sha1(mv[i:i + piece_length]).digest()
    tail = len(mv) - full
    if tail:
        h = sha1(mv[full:])
        h.update(bytes(piece_length - tail))
        out += h.digest()
        padding -= piece_length - tail
    if padding:
        zeros = sha1(bytes(piece_length)).digest()
        out += zeros * (padding // piece_length)
    mv.release()
    return bytes(out)


def _file_chunks(paths: Sequence[Path], block: int = 64 * PIECE_LENGTH, limit: int | None = None
                 ) -> Iterable[bytes]:
    """The files' bytes in `block`s, at most `limit` bytes in all."""
    left = limit
    for p in paths:
        with open(p, "rb") as f:
            while left is None or left > 0:
                chunk = f.read(block if left is None else min(block, left))
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
                yield chunk


def data_piece_hashes(path: Path | str, length: int, check: Callable[[], None] | None = None) -> bytes:
    """The piece hashes of the first `length` bytes of a `data` file (a whole number of pieces: archives already
    appended; the Spark build hashes them while its executors encode the new ones). `check` runs after each
    block is read (it raises to stop)."""
    if length % PIECE_LENGTH:
        raise ValueError(f"{length} bytes of data is not a whole number of pieces")
    chunks = _file_chunks([Path(path)], limit=length)
    if check is not None:
        chunks = (c for c in chunks if check() is None)
    pieces = piece_hashes(chunks)
    if len(pieces) != 20 * (length // PIECE_LENGTH):
        raise ValueError(f"{path} is shorter than {length} bytes")
    return pieces


def build_metainfo(folder: Path | str, community_id: str, trackers: Sequence[str] = (),
                   data_pieces: bytes | None = None) -> bytes:
    """The .torrent for `<folder>/{data,index}`: v1 only, name = community ID, no creation date (reproducible).

    `data_pieces`, when given, are the piece hashes of the whole `data` file, computed elsewhere (by the Spark
    build's executors, archive by archive); only the index is then read and hashed here. `data` is a whole number
    of pieces, so the index's pieces start on a piece boundary and hash alone: the bytes are the same."""
    folder = Path(folder)
    paths = [folder / DATA_FILE, folder / INDEX_FILE]
    sizes = [p.stat().st_size for p in paths]
    if data_pieces is None:
        pieces = piece_hashes(_file_chunks(paths))
    else:
        if sizes[0] % PIECE_LENGTH or len(data_pieces) != 20 * (sizes[0] // PIECE_LENGTH):
            raise ValueError(f"{len(data_pieces)} bytes of piece hashes do not describe {sizes[0]} bytes of data")
        pieces = data_pieces + piece_hashes(_file_chunks(paths[1:]))
    info = {
        b"files": [{b"length": n, b"path": [p.name.encode()]} for p, n in zip(paths, sizes)],
        b"name": community_id.encode(),
        b"piece length": PIECE_LENGTH,
        b"pieces": pieces,
    }
    meta: dict[bytes, object] = {b"info": info}
    if trackers:
        meta[b"announce"] = trackers[0].encode()
        meta[b"announce-list"] = [[t.encode()] for t in trackers]
    return fastbencode.bencode(meta)


def is_magnet_link(text: str) -> bool:
    """Whether an archive link (or what a user typed) is a magnet link, not a Codex CID or a path: the one rule for
    every reader. The scheme's case does not matter (RFC 3986) and neither do blanks around it;
    core.torrent.magnet.parse_magnet says what is wrong with the rest."""
    return text.strip()[:8].lower() == "magnet:?"


def magnet_link(infohash_hex: str, name: str, trackers: Sequence[str] = ()) -> str:
    parts = [f"magnet:?xt=urn:btih:{infohash_hex.lower()}", f"dn={quote(name, safe='')}"]
    parts += [f"tr={quote(t, safe='')}" for t in trackers]
    return "&".join(parts)


def _info_span(raw: bytes) -> bytes:
    """The exact bytes of the info dict, found by re-encoding (fastbencode decodes into plain values).
    A non-canonical encoding is refused rather than hashed differently from how a peer would."""
    meta = fastbencode.bdecode(raw)
    info_bytes = fastbencode.bencode(meta[b"info"])
    if info_bytes not in raw:
        raise InvalidTorrent("info dictionary is not canonically bencoded", code="torrent-not-canonical")
    return info_bytes


def check_bencode_shape(raw: bytes, max_depth: int = MAX_BENCODE_DEPTH, max_values: int = MAX_BENCODE_VALUES) -> None:
    """Refuse a bencoded value nested deeper than `max_depth` or holding more than `max_values` values, walking its
    first value's tokens (strings are skipped by their length). Malformed bytes are left to the decoder."""
    depth = values = i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == 0x65:                               # e: a list or dictionary ends
            depth -= 1
            i += 1
        else:
            if c == 0x64 or c == 0x6C:              # d, l
                depth += 1
                if depth > max_depth:
                    raise InvalidTorrent(f"torrent is nested deeper than {max_depth} levels",
                                         code="torrent-undecodable")
                i += 1
            elif c == 0x69:                         # i<digits>e
                j = raw.find(b"e", i)
                if j < 0:
                    return
                i = j + 1
            elif 0x30 <= c <= 0x39:                 # <length>:<bytes>
                j = raw.find(b":", i, i + 21)
                if j < 0 or not raw[i:j].isdigit():
                    return
                i = j + 1 + int(raw[i:j])
            else:
                return
            values += 1
            if values > max_values:
                raise InvalidTorrent(f"torrent holds more than {max_values} values", code="torrent-undecodable")
        if depth <= 0:
            return


def parse_metainfo(raw: bytes, *, expected_name: str | None = None,
                   max_total: int = MAX_TOTAL_BYTES) -> Metainfo:
    """Decode and validate a status-format torrent. Raises InvalidTorrent with a reason; writes nothing."""
    if len(raw) > MAX_METAINFO_BYTES:
        raise InvalidTorrent(f"torrent file is {len(raw)} bytes, over {MAX_METAINFO_BYTES}", code="torrent-too-big")
    check_bencode_shape(raw)
    try:
        meta = fastbencode.bdecode(raw)
    except Exception as e:  # fastbencode raises ValueError/TypeError/KeyError/IndexError on junk
        raise InvalidTorrent(f"not a bencoded torrent: {e}", code="torrent-undecodable") from None
    if not isinstance(meta, dict) or not isinstance(meta.get(b"info"), dict):
        raise InvalidTorrent("torrent has no info dictionary", code="torrent-undecodable")
    info = meta[b"info"]
    return metainfo_from_info(info, _info_span(raw), _trackers(meta), raw,
                              expected_name=expected_name, max_total=max_total)


def read_metainfo(path: Path | str, **kw) -> Metainfo:
    """parse_metainfo of a file, refused before reading if it is larger than any torrent can be."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_METAINFO_BYTES:
        raise InvalidTorrent(f"torrent file is {size} bytes, over {MAX_METAINFO_BYTES}", code="torrent-too-big")
    with open(path, "rb") as f:
        return parse_metainfo(f.read(MAX_METAINFO_BYTES + 1), **kw)


def _trackers(meta: dict) -> tuple[str, ...]:
    out: list[str] = []
    al = meta.get(b"announce-list")
    if isinstance(al, list):
        for tier in al:
            if isinstance(tier, list):
                out += [t.decode("utf-8", "replace") for t in tier if isinstance(t, bytes)]
    elif isinstance(meta.get(b"announce"), bytes):
        out.append(meta[b"announce"].decode("utf-8", "replace"))
    return tuple(out)


def _show(v: object) -> str:
    """A short description of a value from outside for an error message (a repr can be huge or recurse
    without end: a 5000-deep nested list raised RecursionError while the message was built, found by fuzzing)."""
    if isinstance(v, bool) or not isinstance(v, (int, bytes, str)):
        return f"a {type(v).__name__}" + (f" of {len(v)} items" if isinstance(v, (list, dict)) else "")
    text = repr(v[:80]) + ("..." if len(v) > 80 else "") if isinstance(v, (bytes, str)) else str(v)
    return text if len(text) <= 100 else text[:100] + "..."


def metainfo_from_info(info: dict, info_bytes: bytes, trackers: tuple[str, ...] = (), raw: bytes = b"", *,
                       expected_name: str | None = None, max_total: int = MAX_TOTAL_BYTES) -> Metainfo:
    """Validate an info dict (also used for metadata received from peers)."""
    def fail(msg: str, code: str) -> None:
        raise InvalidTorrent(msg, code=code)

    if b"meta version" in info or b"file tree" in info:
        fail("torrent is BitTorrent v2/hybrid; status archives are v1 only", "torrent-not-v1")
    name = info.get(b"name")
    if not isinstance(name, bytes):
        fail("torrent has no name", "torrent-bad-name")
    name_s = name.decode("utf-8", "replace")
    if "/" in name_s or "\\" in name_s or name_s in ("", ".", "..") or "\x00" in name_s:
        fail(f"torrent name {_show(name_s)} is not a plain folder name", "torrent-path-traversal")
    if expected_name is not None and name_s != expected_name:
        fail(f"torrent name {_show(name_s)} is not the community ID {expected_name}", "torrent-bad-name")
    pl = info.get(b"piece length")
    if type(pl) is not int or pl != PIECE_LENGTH:
        fail(f"piece length {_show(pl)} is not {PIECE_LENGTH}", "torrent-bad-piece-length")
    files = info.get(b"files")
    if not isinstance(files, list):
        fail("torrent is single-file; expected the two files data and index", "torrent-bad-files")
    parsed: list[TorrentFile] = []
    for f in files:
        if not isinstance(f, dict):
            fail("malformed file entry", "torrent-bad-files")
        path, length = f.get(b"path"), f.get(b"length")
        if not isinstance(path, list) or not all(isinstance(p, bytes) for p in path):
            fail("malformed file path", "torrent-bad-files")
        if len(path) != 1 or path[0] in (b"", b".", b"..") or b"/" in path[0] or b"\\" in path[0] or b"\x00" in path[0]:
            fail(f"file path {_show(b'/'.join(path))} leaves the torrent folder or is not a plain name",
                 "torrent-path-traversal")
        if type(length) is not int or length < 0:
            fail(f"file length {_show(length)} is invalid", "torrent-bad-size")
        if f.get(b"attr") is not None:
            fail("file attributes (pad files, symlinks) are not allowed", "torrent-bad-files")
        parsed.append(TorrentFile(path[0].decode("utf-8", "replace"), length))
    if [f.path for f in parsed] != [DATA_FILE, INDEX_FILE]:
        fail(f"files are {_show(', '.join(f.path for f in parsed))}, expected data and index", "torrent-bad-files")
    data_len, index_len = parsed[0].length, parsed[1].length
    total = data_len + index_len
    if total > max_total:
        fail(f"torrent claims {total} bytes, over the limit of {max_total}", "torrent-bad-size")
    if data_len % PIECE_LENGTH:
        fail(f"data is {data_len} bytes, not a multiple of {PIECE_LENGTH}", "torrent-bad-size")
    if index_len > MAX_INDEX_BYTES or (data_len and not index_len):
        fail(f"index size {index_len} is out of proportion", "torrent-bad-size")
    pieces = info.get(b"pieces")
    want = -(-total // PIECE_LENGTH)
    if not isinstance(pieces, bytes) or len(pieces) != 20 * want:
        fail(f"pieces field has {len(pieces) if isinstance(pieces, bytes) else '?'} bytes, expected {20 * want}",
             "torrent-bad-pieces")
    return Metainfo(name_s, pl, pieces, tuple(parsed), trackers, info_bytes, raw)
