"""Child process for the crash test: builds week after week and prints each completed archive ID."""
import sys

from core.archive.build import build_archives
from core.synth import synthesize

db, data_dir, torrent_dir, cid, topics_hex, start, weeks = sys.argv[1:8]
topics = [bytes.fromhex(t) for t in topics_hex.split(",")]
for k in range(1, int(weeks) + 1):
    res = build_archives(db, cid, topics, data_dir, torrent_dir, end=int(start) + k * 7 * 86400)
    for aid in res.new_archive_ids:
        print(aid, flush=True)
print("done", flush=True)
