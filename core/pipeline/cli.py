"""`archivist spark-build` and `archivist spark-hydrate`: the Spark pipeline from the command line.

spark-build takes the same arguments as `archivist build` (and gives byte-identical output), plus --master and
the cluster flags (driver address and ports, executor Python, worker timeout, secret file and encryption;
docs/PIPELINE.md "Cluster"). `archivist spark-master` / `spark-worker` run Spark's own standalone daemons.
"""
from __future__ import annotations

import functools
import sys
from concurrent.futures import TimeoutError as FutureTimeout

from core.archive.cli import add_build_arguments
from core.archive.constants import community_id_arg
from core.archive.errors import ArchiveError
from core.pipeline.session import DEFAULT_MASTER, EXECUTOR_TIMEOUT_S as DEFAULT_EXECUTOR_TIMEOUT


def _owner(a, command: str):
    """The job's SparkOwner. Checks the secret file first (SparkSecurityError: exit 2 before any JVM starts) and
    prints the insecure-master warning on stderr (the owner does not log it again)."""
    from core.pipeline.session import SparkOwner, SparkSettings
    s = SparkSettings(master=a.master, driver_host=a.driver_host, driver_bind=a.driver_bind,
                      driver_port=a.driver_port, block_manager_port=a.block_manager_port,
                      executor_python=a.executor_python, executor_timeout=a.executor_timeout,
                      secret_file=a.spark_secret_file, encrypt=a.spark_encrypt,
                      stage_dir=getattr(a, "stage_dir", None))
    s.secret_conf()
    warning = s.security_warning()
    if warning:
        print(f"archivist {command}: {warning}", file=sys.stderr)
    return SparkOwner(s, log_warnings=False)


def add_security_arguments(p) -> None:
    p.add_argument("--spark-secret-file", metavar="FILE",
                   help="the cluster's shared secret (spark.authenticate), a file only you can read (mode 0600)")
    p.add_argument("--spark-encrypt", action="store_true",
                   help="encrypt Spark's network traffic (spark.network.crypto.enabled; needs --spark-secret-file)")


def _master(text: str) -> str:
    """--master's type: cluster_conf.master_problem, argparse's error."""
    import argparse
    from core.pipeline.cluster_conf import master_problem
    if problem := master_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def add_spark_arguments(p) -> None:
    """--master and the flags for a standalone cluster (ignored in local mode unless given)."""
    p.add_argument("--master", default=DEFAULT_MASTER, type=_master, help=f"Spark master URL: {DEFAULT_MASTER} "
                   "(default) or spark://host:port")
    p.add_argument("--driver-host", help="address executors use to reach this driver "
                   "(default: the local address that routes to the master; 127.0.0.1 in local mode)")
    p.add_argument("--driver-bind", help="address the driver listens on (default: --driver-host; differs behind NAT)")
    p.add_argument("--driver-port", type=int, help="fixed driver RPC port (default: any free port)")
    p.add_argument("--block-manager-port", type=int, help="fixed driver block manager port (default: any free port)")
    p.add_argument("--executor-python", help="Python the executors run (default: python3 on each worker's PATH)")
    p.add_argument("--executor-timeout", "--worker-timeout", dest="executor_timeout", type=float,
                   default=DEFAULT_EXECUTOR_TIMEOUT, metavar="SECONDS",
                   help="fail a job (exit 1, nothing written) when no Spark executor has been registered this long: "
                   f"no worker, or every worker lost (cluster mode; default {DEFAULT_EXECUTOR_TIMEOUT:g})")
    add_security_arguments(p)
    p.add_argument("--progress", action="store_true", help="show the fraction of Spark tasks done on stderr")


def add_stage_argument(p) -> None:
    p.add_argument("--stage-dir", metavar="PATH",
                   help="cluster mode: a folder shared at the same path by this machine and every worker; the "
                   "driver stages its input there (messages, or the archives to import) and executors read only "
                   "it, never the SQLite store or `data` (ignored in local mode; docs/PIPELINE.md)")


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


NOTHING_WRITTEN = "; nothing was written"


def run_job(command: str, owner, submit, show_progress: bool, failed: tuple = (), *, failed_note: str = "",
            cancelled_note: str = ""):
    """Run one Spark job to its end and close the owner, with the exit codes every job command shares: 0 and the
    result; 1 the job failed (JobFailed or one of `failed`); 2 unusable input or settings; 130 cancelled.
    Returns (code, result or None); the reason is printed as one line, with the note the command can promise
    (NOTHING_WRITTEN when its output is written only at the end)."""
    from core.pipeline.security import SparkSecurityError
    from core.pipeline.cluster_conf import SparkConfigError
    from core.pipeline.session import JobCancelled, JobFailed
    try:
        return 0, _wait(submit(), show_progress)
    except (ArchiveError, FileNotFoundError, SparkConfigError, SparkSecurityError) as e:
        code, line = 2, str(e)
    except (JobFailed, *failed) as e:
        code, line = 1, f"{e}{failed_note}"
    except JobCancelled as e:
        code, line = 130, f"{e}{cancelled_note}"
    finally:
        owner.close()
    print(f"archivist {command}: {line}", file=sys.stderr)
    return code, None


def cmd_spark_build(a) -> int:
    from core.pipeline.build import submit_build
    from core.pipeline.security import SparkSecurityError
    from core.archive.cli import print_build_result
    from core.status.build_cli import encrypt_transform
    transform = encrypt_transform(a)
    try:
        owner = _owner(a, "spark-build")
    except SparkSecurityError as e:
        print(f"archivist spark-build: {e}", file=sys.stderr)
        return 2
    code, res = run_job("spark-build", owner, lambda: submit_build(
        owner, a.db, a.community_id, a.topic, a.data_dir, a.torrent_dir, start=a.start, end=a.end,
        trackers=a.tracker or [], transform=transform), a.progress, cancelled_note=NOTHING_WRITTEN)
    if code:
        return code
    print_build_result(res, a.json)
    return 0


def cmd_spark_hydrate(a) -> int:
    from core.cli import print_json
    from core.pipeline.hydrate import HydrateError, submit_hydrate
    from core.status.archive_encryption import key_store
    from core.status.archive_encryption import open_archive_bytes, open_index_bytes
    from core.torrent.selection import selection_from_args
    try:
        selection = selection_from_args(a)
        store = key_store(a.key, a.community_id)
        owner = _owner(a, "spark-hydrate")
    except (ValueError, ArchiveError) as e:   # SparkSecurityError is a ValueError
        print(f"archivist spark-hydrate: {e}", file=sys.stderr)
        return 2
    code, res = run_job("spark-hydrate", owner, lambda: submit_hydrate(
        owner, a.folder, a.community_id, a.db, archive_ids=a.archive_id, selection=selection,
        open_archive=functools.partial(open_archive_bytes, store=store),
        open_index=functools.partial(open_index_bytes, store=store)), a.progress, (HydrateError,))
    if code:
        return code
    if a.json:
        print_json(res.to_json())
    else:
        print(f"imported {len(res.imported_archive_ids)} archives ({res.windows} windows), {res.messages} messages")
    return 0


def _daemon_cluster(a, *, master: bool):
    """The StandaloneCluster of `spark-master` (master only) or `spark-worker` (worker only)."""
    import os
    from core.pipeline import security
    from core.pipeline.cluster import StandaloneCluster
    from core.pipeline.cluster_conf import _cache_home, local_address_towards, master_host_port
    if master:
        workdir = a.work_dir or security.runtime_dir() / f"master-{a.port}"
        host = a.host
    else:
        master_host_port(a.master)   # SparkConfigError for a malformed URL
        workdir = a.work_dir or _cache_home() / "archivist" / "spark-worker"
        host = a.host or local_address_towards(*master_host_port(a.master))
    os.makedirs(os.path.dirname(os.path.abspath(workdir)), mode=0o700, exist_ok=True)
    return StandaloneCluster(workdir, master=master, worker=not master, host=host, port=a.port,
                             webui_port=a.webui_port, secret_file=a.spark_secret_file, encrypt=a.spark_encrypt,
                             cores=None if master else a.cores, memory=None if master else a.memory,
                             master_url=None if master else a.master, timeout=a.start_timeout)


def cmd_spark_daemon(a) -> int:
    """`archivist spark-master` / `spark-worker`: Spark's own daemon in the foreground; Ctrl-C stops it.
    stdout: the master URL (master) or `registered with URL` (worker), once ready; then nothing."""
    from core.pipeline.cluster import DaemonError, serve
    from core.pipeline.security import SparkSecurityError, insecure_master_warning
    from core.pipeline.cluster_conf import SparkConfigError
    master = a.command == "spark-master"
    try:
        cluster = _daemon_cluster(a, master=master)
    except (SparkSecurityError, SparkConfigError) as e:
        print(f"archivist {a.command}: {e}", file=sys.stderr)
        return 2
    url = f"spark://{cluster.host}:{a.port}" if master else a.master
    warning = insecure_master_warning(url, secret=bool(a.spark_secret_file), encrypt=a.spark_encrypt)
    if warning:
        print(f"archivist {a.command}: {warning}", file=sys.stderr)

    def announce(c):
        print(c.master_url if master else f"registered with {c.master_url}", flush=True)
        log = (c.master or c.worker).log_path
        print(f"archivist {a.command}: running (log: {log}); Ctrl+C stops it", file=sys.stderr, flush=True)
    try:
        return serve(cluster, announce)
    except DaemonError as e:
        print(f"archivist {a.command}: {e}", file=sys.stderr)
        return 1


def register(sub) -> None:
    p = sub.add_parser("spark-build")
    add_build_arguments(p)     # on a cluster without --stage-dir the executors open the database (a shared path)
    add_spark_arguments(p)
    add_stage_argument(p)
    p.set_defaults(func=cmd_spark_build)

    p = sub.add_parser("spark-hydrate")
    p.add_argument("--folder", required=True, help="folder with the downloaded `data` and `index`")
    p.add_argument("--community-id", required=True, type=community_id_arg)
    p.add_argument("--db", required=True, help="member history SQLite file (created if missing)")
    p.add_argument("--archive-id", action="append", help="archive to import; repeat (default: the selection)")
    from core.torrent.selection import add_selection_arguments
    add_selection_arguments(p)
    p.add_argument("--key", action="append", help="community group key HEX[@TIMESTAMP_MS] (encrypted; repeat)")
    add_spark_arguments(p)
    add_stage_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spark_hydrate)

    for name, text in (("spark-master", "run a Spark standalone master (Spark's own daemon) in the foreground"),
                       ("spark-worker", "run a Spark standalone worker (Spark's own daemon) in the foreground")):
        p = sub.add_parser(name, help=text)
        if name == "spark-master":
            p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                           "give the machine's address, or 0.0.0.0, for workers and drivers elsewhere)")
            p.add_argument("--port", type=int, default=7077, help="master port (default 7077; 0: any free port)")
            p.add_argument("--webui-port", type=int, default=8080, help="web UI port (default 8080; 0: any)")
        else:
            p.add_argument("--master", required=True, help="the master's URL, spark://HOST:PORT")
            p.add_argument("--host", help="address to listen on (default: the local address that routes to the "
                           "master)")
            p.add_argument("--port", type=int, default=0, help="worker port (default: any free port)")
            p.add_argument("--webui-port", type=int, default=0, help="web UI port (default: any free port)")
            p.add_argument("--cores", type=int, help="cores to offer (default: all)")
            p.add_argument("--memory", help="memory to offer, e.g. 4g (default: all but 1 GiB)")
        p.add_argument("--work-dir", help="logs and (worker) executor folders (default: a private folder)")
        p.add_argument("--start-timeout", type=float, default=180.0, metavar="SECONDS",
                       help="give up when the daemon is not up after this long (default 180)")
        add_security_arguments(p)
        p.set_defaults(func=cmd_spark_daemon, command=name)
