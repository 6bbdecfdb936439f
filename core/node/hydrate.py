"""Single-process reference import of archives into the member history (the Spark hydrate job must agree)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from core.archive import codec
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.constants import DATA_FILE
from core.archive.errors import ArchiveError
from core.status.application_metadata import open_protocol_payload
from core.status.chat_message import CHAT_MESSAGE, decode_chat_message
from core.status.errors import StatusError
from core.storage.member_history import HistoryRow, MemberHistory


def history_row(m: ArchiveMessage) -> HistoryRow:
    """Unwrap ProtocolMessage -> ApplicationMetadataMessage -> ChatMessage where possible."""
    base = dict(id="0x" + m.hash.hex(), chat_id="", topic="0x" + m.topic.hex(), timestamp=m.timestamp)
    try:
        app = open_protocol_payload(m.payload)
    except StatusError:
        return HistoryRow(**base, app_type=-1)               # undecodable payload: keep its place, no content
    author = "0x" + app.signer.hex() if app.signer else ""
    if app.type == CHAT_MESSAGE:
        try:
            c = decode_chat_message(app.payload)
            return HistoryRow(**{**base, "chat_id": c.chat_id}, clock=c.clock, author=author, text=c.text,
                              content_type=c.content_type, app_type=app.type)
        except StatusError:
            pass
    return HistoryRow(**base, author=author, app_type=app.type)


def read_archive(folder: Path, aid: str, e: IndexEntry, unwrap=None) -> codec.DecodedArchive:
    with open(Path(folder) / DATA_FILE, "rb") as f:
        f.seek(e.offset)
        raw = f.read(e.raw_size)
    if len(raw) < e.raw_size:
        raise ArchiveError(f"archive {aid} is not fully downloaded", code="archive-incomplete", archive_id=aid)
    if unwrap is not None:
        raw = unwrap(raw)
    return codec.decode_archive(raw, archive_id=aid)


def reference_hydrator(history: MemberHistory, unwrap=None):
    """hydrator(community_id, folder, {id: entry}) for MemberNode: one transaction per 7-day window.

    A window cut into several 30 MB chunks is several archives with the same [from, to): they replace the window
    together, or the second chunk would delete the first one's messages."""
    def hydrate(cid: str, folder: Path, chosen: Mapping[str, IndexEntry]) -> int:
        windows: dict[tuple[int, int], list[tuple[str, IndexEntry]]] = {}
        for aid, e in sorted(chosen.items(), key=lambda kv: kv[1].offset):
            windows.setdefault((e.start, e.end), []).append((aid, e))
        n = 0
        for (start, end), parts in windows.items():
            rows = [history_row(m) for aid, e in parts for m in read_archive(folder, aid, e, unwrap).messages]
            n += history.replace_range(cid, start, end, rows)
        return n
    return hydrate
