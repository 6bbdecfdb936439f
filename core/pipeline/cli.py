"""`archivist spark-build` and `archivist spark-hydrate`: the Spark pipeline from the command line.

spark-build takes the same arguments as `archivist build` (and gives byte-identical output), plus --master.
"""
from __future__ import annotations

import sys
from concurrent.futures import TimeoutError as FutureTimeout

from core.archive.cli import _community_id, _hex_topic
from core.archive.errors import ArchiveError


def _owner(master: str):
    from core.pipeline.session import SparkOwner, SparkSettings
    return SparkOwner(SparkSettings(master=master))


def _wait(job, show_progress: bool):
    """Wait for the job, printing progress to stderr; Ctrl-C cancels the Spark job group."""
    try:
        while True:
            try:
                return job.result(timeout=0.5)
            except FutureTimeout:
                if show_progress:
                    print(f"\r{job.description}: {job.progress() * 100:5.1f}%", end="", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        job.cancel()
        raise
    finally:
        if show_progress:
            print(file=sys.stderr)


def cmd_spark_build(a) -> int:
    from core.archive.cli import _ts
    from core.cli import print_json
    from core.pipeline.build import submit_build
    from core.pipeline.session import JobCancelled
    transform = None
    if a.encrypt_key:
        from core.status.archive_encryption import transform_from_cli
        transform = transform_from_cli(a.encrypt_key, a.community_id)
    owner = _owner(a.master)
    try:
        job = submit_build(owner, a.db, a.community_id, a.topic, a.data_dir, a.torrent_dir, start=a.start,
                           end=a.end, trackers=a.tracker or [], transform=transform)
        res = _wait(job, a.progress)
    except (ArchiveError, FileNotFoundError) as e:
        print(f"archivist spark-build: {e}", file=sys.stderr)
        return 2
    except JobCancelled as e:
        print(f"archivist spark-build: {e}; nothing was written", file=sys.stderr)
        return 130
    finally:
        owner.close()
    if a.json:
        print_json(res.to_json())
    else:
        print(f"{len(res.new_archive_ids)} new archives, {res.messages} messages, data {res.data_bytes} bytes")
        for r in res.archives:
            print(f"  {r['id']}  {_ts(r['from'])} .. {_ts(r['to'])}  {r['size']} bytes")
        if res.magnet:
            print(f"infohash {res.infohash}\nmagnet   {res.magnet}")
    return 0


def cmd_spark_hydrate(a) -> int:
    from core.cli import print_json
    from core.pipeline.hydrate import HydrateError, submit_hydrate
    from core.pipeline.session import JobCancelled
    owner = _owner(a.master)
    try:
        res = _wait(submit_hydrate(owner, a.folder, a.community_id, a.db, archive_ids=a.archive_id), a.progress)
    except HydrateError as e:
        print(f"archivist spark-hydrate: {e}", file=sys.stderr)
        return 1
    except (ArchiveError, FileNotFoundError) as e:
        print(f"archivist spark-hydrate: {e}", file=sys.stderr)
        return 2
    except JobCancelled as e:
        print(f"archivist spark-hydrate: {e}", file=sys.stderr)
        return 130
    finally:
        owner.close()
    if a.json:
        print_json(res.to_json())
    else:
        print(f"imported {len(res.imported_archive_ids)} archives ({res.windows} windows), {res.messages} messages")
    return 0


def register(sub) -> None:
    p = sub.add_parser("spark-build", help="build archives on Spark (same arguments and bytes as `build`)")
    p.add_argument("--db", required=True, help="SQLite file with a waku_messages table (readable by executors)")
    p.add_argument("--community-id", required=True, type=_community_id)
    p.add_argument("--topic", required=True, action="append", type=_hex_topic, help="0x<8 hex>; repeat per topic")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--torrent-dir", required=True)
    p.add_argument("--start", type=int, help="UNIX seconds (default: end of the last archive, else oldest message)")
    p.add_argument("--end", type=int, help="UNIX seconds (default: now)")
    p.add_argument("--tracker", action="append", help="announce URL; repeat; none by default")
    p.add_argument("--encrypt-key", help="hex community group key: encrypt archives (encrypted communities)")
    p.add_argument("--master", default="local[*]", help="Spark master URL: local[*] (default) or spark://host:port")
    p.add_argument("--progress", action="store_true", help="show the fraction of Spark tasks done on stderr")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spark_build)

    p = sub.add_parser("spark-hydrate", help="import downloaded archives into a member history database on Spark")
    p.add_argument("--folder", required=True, help="folder with the downloaded `data` and `index`")
    p.add_argument("--community-id", required=True, type=_community_id)
    p.add_argument("--db", required=True, help="member history SQLite file (created if missing)")
    p.add_argument("--archive-id", action="append", help="archive to import; repeat (default: all in the index)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spark_hydrate)
