"""The crash test's child: builds week after week and reports each completed archive ID, then "done". Started from
the tests' fork server (tests/support/forked.py) with the write end of a pipe, so that the kills land in the
builds rather than in a new interpreter's start-up and imports."""
from core.archive.build import build_archives


def build_weeks(conn, db: str, data_dir: str, torrent_dir: str, cid: str, topics_hex: str, start: int,
                weeks: int) -> None:
    topics = [bytes.fromhex(t) for t in topics_hex.split(",")]
    for k in range(1, weeks + 1):
        res = build_archives(db, cid, topics, data_dir, torrent_dir, end=start + k * 7 * 86400)
        for aid in res.new_archive_ids:
            conn.send_bytes(aid.encode())
    conn.send_bytes(b"done")
