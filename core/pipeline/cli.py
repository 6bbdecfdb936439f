"""`archivist spark-build` and `archivist spark-hydrate`: the Spark pipeline from the command line.

spark-build takes the same arguments as `archivist build` (and gives byte-identical output), plus --master and
the cluster flags (driver address and ports, executor Python, worker timeout; docs/PIPELINE.md "Cluster").
"""
from __future__ import annotations

import functools
import sys
from concurrent.futures import TimeoutError as FutureTimeout

from core.archive.cli import _community_id, add_build_arguments
from core.archive.errors import ArchiveError


def _owner(a):
    from core.pipeline.session import SparkOwner, SparkSettings
    return SparkOwner(SparkSettings(master=a.master, driver_host=a.driver_host, driver_bind=a.driver_bind,
                                    driver_port=a.driver_port, block_manager_port=a.block_manager_port,
                                    executor_python=a.executor_python, worker_timeout=a.worker_timeout))


def add_spark_arguments(p) -> None:
    """--master and the flags for a standalone cluster (ignored in local mode unless given)."""
    p.add_argument("--master", default="local[*]", help="Spark master URL: local[*] (default) or spark://host:port")
    p.add_argument("--driver-host", help="address executors use to reach this driver "
                   "(default: the local address that routes to the master; 127.0.0.1 in local mode)")
    p.add_argument("--driver-bind", help="address the driver listens on (default: --driver-host; differs behind NAT)")
    p.add_argument("--driver-port", type=int, help="fixed driver RPC port (default: any free port)")
    p.add_argument("--block-manager-port", type=int, help="fixed driver block manager port (default: any free port)")
    p.add_argument("--executor-python", help="Python the executors run (default: python3 on each worker's PATH)")
    p.add_argument("--worker-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="fail when no Spark executor has been available this long (cluster mode; default 60)")
    p.add_argument("--progress", action="store_true", help="show the fraction of Spark tasks done on stderr")


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
    from core.pipeline.build import submit_build
    from core.pipeline.session import JobCancelled, JobFailed, SparkConfigError
    from core.archive.cli import print_build_result
    from core.status.build_cli import encrypt_transform
    transform = encrypt_transform(a)
    owner = _owner(a)
    try:
        job = submit_build(owner, a.db, a.community_id, a.topic, a.data_dir, a.torrent_dir, start=a.start,
                           end=a.end, trackers=a.tracker or [], transform=transform)
        res = _wait(job, a.progress)
    except (ArchiveError, FileNotFoundError, SparkConfigError) as e:
        print(f"archivist spark-build: {e}", file=sys.stderr)
        return 2
    except JobFailed as e:
        print(f"archivist spark-build: {e}", file=sys.stderr)
        return 1
    except JobCancelled as e:
        print(f"archivist spark-build: {e}; nothing was written", file=sys.stderr)
        return 130
    finally:
        owner.close()
    print_build_result(res, a.json)
    return 0


def cmd_spark_hydrate(a) -> int:
    from core.cli import print_json
    from core.pipeline.hydrate import HydrateError, submit_hydrate
    from core.pipeline.session import JobCancelled, JobFailed, SparkConfigError
    from core.status.archive_encryption import key_store
    from core.status.archive_encryption import open_archive_bytes, open_index_bytes
    from core.torrent.selection import selection_from_args
    try:
        selection = selection_from_args(a)
        store = key_store(a.key, a.community_id)
    except (ValueError, ArchiveError) as e:
        print(f"archivist spark-hydrate: {e}", file=sys.stderr)
        return 2
    owner = _owner(a)
    try:
        job = submit_hydrate(owner, a.folder, a.community_id, a.db, archive_ids=a.archive_id, selection=selection,
                             open_archive=functools.partial(open_archive_bytes, store=store),
                             open_index=functools.partial(open_index_bytes, store=store))
        res = _wait(job, a.progress)
    except (HydrateError, JobFailed) as e:
        print(f"archivist spark-hydrate: {e}", file=sys.stderr)
        return 1
    except (ArchiveError, FileNotFoundError, SparkConfigError) as e:
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
    add_build_arguments(p)     # the database must be readable by the executors (a shared path on a cluster)
    add_spark_arguments(p)
    p.set_defaults(func=cmd_spark_build)

    p = sub.add_parser("spark-hydrate", help="import downloaded archives into a member history database on Spark")
    p.add_argument("--folder", required=True, help="folder with the downloaded `data` and `index`")
    p.add_argument("--community-id", required=True, type=_community_id)
    p.add_argument("--db", required=True, help="member history SQLite file (created if missing)")
    p.add_argument("--archive-id", action="append", help="archive to import; repeat (default: the selection)")
    from core.torrent.selection import add_selection_arguments
    add_selection_arguments(p)
    p.add_argument("--key", action="append", help="community group key HEX[@TIMESTAMP_MS] (encrypted; repeat)")
    add_spark_arguments(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spark_hydrate)
