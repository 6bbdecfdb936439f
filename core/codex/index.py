"""The Codex archive index (WIRE-FORMAT.md section 7): CodexWakuMessageArchiveIndex {id -> {metadata, cid}}.

Archive ID = "0x" + Keccak-256 of the encoded CodexWakuMessageArchiveIndexMetadata, like the torrent index.
Entries are written sorted by key, so the same archives always give the same index bytes and the same CID.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from google.protobuf.message import DecodeError as _PbDecodeError

from core.archive.codec import DecodedArchive, archive_id, decode_archive, metadata_pb, refuse_too_many_entries
from core.archive.constants import MAX_INDEX_BYTES
from core.archive.errors import ArchiveError
from core.codex.cid import CidError, parse_cid
from core.pb import communities_archive_pb2 as pb


@dataclass(frozen=True, slots=True)
class CodexIndexEntry:
    start: int             # metadata.from (seconds)
    end: int               # metadata.to (seconds)
    topics: tuple[bytes, ...]
    cid: str               # manifest CID of the uploaded (possibly encrypted) archive
    version: int = 0

    def to_pb(self) -> pb.CodexWakuMessageArchiveIndexMetadata:
        return pb.CodexWakuMessageArchiveIndexMetadata(
            version=self.version, metadata=metadata_pb(self.start, self.end, self.topics), cid=self.cid)

    def encode(self) -> bytes:
        return self.to_pb().SerializeToString(deterministic=True)

    @property
    def archive_id(self) -> str:
        return archive_id(self.encode())

    def overlaps(self, lo: int, hi: int) -> bool:
        """Does [start, end) meet [lo, hi)?"""
        return self.start < hi and lo < self.end

    @classmethod
    def from_pb(cls, m: pb.CodexWakuMessageArchiveIndexMetadata) -> "CodexIndexEntry":
        return cls(getattr(m.metadata, "from"), m.metadata.to, tuple(m.metadata.contentTopic), m.cid, m.version)


@dataclass(frozen=True, slots=True)
class IndexProblem:
    code: str
    message: str
    archive_id: str | None = None


def encode_index(entries: Mapping[str, CodexIndexEntry] | Iterable[CodexIndexEntry]) -> bytes:
    if not isinstance(entries, Mapping):
        entries = {e.archive_id: e for e in entries}
    idx = pb.CodexWakuMessageArchiveIndex()
    for key in sorted(entries):
        idx.archives[key].CopyFrom(entries[key].to_pb())
    return idx.SerializeToString(deterministic=True)


def decode_index(raw: bytes) -> dict[str, CodexIndexEntry]:
    """Decode; raises core.archive.errors.DecodeError with a reason. Invariants: see check_index."""
    from core.archive.errors import DecodeError
    if len(raw) > MAX_INDEX_BYTES:
        raise DecodeError(f"Codex index of {len(raw)} bytes is implausibly large", code="index-too-large")
    raw = bytes(raw)
    refuse_too_many_entries(raw, "index-too-large")
    idx = pb.CodexWakuMessageArchiveIndex()
    try:
        idx.ParseFromString(raw)
    except (_PbDecodeError, RuntimeError, ValueError) as e:
        raise DecodeError(f"index does not decode as CodexWakuMessageArchiveIndex: {e}",
                          code="index-undecodable") from None
    if raw and not idx.archives:
        raise DecodeError("index is not empty but holds no archives (encrypted, or not a Codex index)",
                          code="index-undecodable")
    return {k: CodexIndexEntry.from_pb(v) for k, v in idx.archives.items()}


def check_index(entries: Mapping[str, CodexIndexEntry]) -> list[IndexProblem]:
    """Every invariant a member checks before fetching anything: keys, windows, CIDs, duplicates."""
    problems = []
    seen_cids: dict[str, str] = {}
    for aid, e in sorted(entries.items()):
        if aid != e.archive_id:
            problems.append(IndexProblem("key-mismatch", f"key {aid} is not the Keccak-256 of its entry "
                                         f"({e.archive_id})", aid))
        if e.start >= e.end:
            problems.append(IndexProblem("window-inverted", f"from {e.start} is not before to {e.end}", aid))
        try:
            parse_cid(e.cid)
        except CidError as err:
            problems.append(IndexProblem("bad-cid", f"archive CID {e.cid[:80]!r} is not a manifest CID: {err}", aid))
        if e.cid in seen_cids:
            problems.append(IndexProblem("duplicate-cid", f"CID {e.cid} is also used by {seen_cids[e.cid]}", aid))
        seen_cids.setdefault(e.cid, aid)
    return problems


def decode_checked_archive(aid: str, entry: CodexIndexEntry, raw: bytes) -> DecodedArchive:
    """Decode an archive and check it against its index entry; raises ArchiveError with a reason."""
    arch = decode_archive(raw, archive_id=aid)
    if (arch.start, arch.end) != (entry.start, entry.end) or tuple(arch.topics) != tuple(entry.topics):
        raise ArchiveError(f"archive says [{arch.start}, {arch.end}) over {len(arch.topics)} topics, index says "
                           f"[{entry.start}, {entry.end}) over {len(entry.topics)}", code="metadata-mismatch",
                           archive_id=aid)
    outside = sum(1 for m in arch.messages if not entry.start <= m.timestamp < entry.end)
    if outside:
        raise ArchiveError(f"{outside} messages lie outside [{entry.start}, {entry.end})",
                           code="message-outside-window", archive_id=aid)
    return arch
