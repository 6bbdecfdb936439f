"""What a job on a standalone cluster needs from the driver's side: the master URL understood, the address the
driver advertises (the local one that routes to the master, or the user's), and the project's code shipped as a
zip built once per version. Pure functions of their arguments and the files; no Spark import (session.py uses
them to configure the session; the CLI and the Settings dialog to check what the user typed)."""
from __future__ import annotations

import hashlib
import os
import socket
import threading
import zipfile
from pathlib import Path
from typing import Callable

class SparkConfigError(ValueError):
    """The settings cannot be turned into a session (e.g. no local address routes to the master)."""


PROJECT_ROOT = Path(__file__).resolve().parents[2]


def is_cluster_master(master: str) -> bool:
    return master.startswith("spark://")


def master_problem(master: str) -> str | None:
    """Why `master` is no Spark master URL (one sentence), or None: local[...], spark://HOST:PORT[,HOST:PORT],
    yarn or k8s://... The one check of the config file, `--master` and the window's Spark settings."""
    if is_cluster_master(master):
        try:
            master_host_port(master)
        except SparkConfigError as e:
            return str(e)
        return None
    if not master.startswith(("local", "yarn", "k8s://")):
        return f"Spark master {master!r} is neither local[…], spark://HOST:PORT, yarn nor k8s://…"
    return None


def master_host_port(master: str) -> tuple[str, int]:
    """`spark://h1:7077[,h2:7077]` -> the first master's (host, port); IPv6 literals in brackets."""
    if not is_cluster_master(master):
        raise SparkConfigError(f"not a standalone master URL: {master}")
    first = master[len("spark://"):].split(",")[0].strip("/")
    host, sep, port = first.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise SparkConfigError(f"Spark master URL needs host and port: {master}")
    return host.strip("[]"), int(port)


def local_address_towards(host: str, port: int) -> str:
    """The local address the OS would use to reach host:port: a UDP socket connect() sends no packet."""
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)
    except OSError as e:
        raise SparkConfigError(f"cannot resolve the Spark master {host}: {e}; pass --driver-host") from None
    infos.sort(key=lambda i: i[0] != socket.AF_INET)   # prefer IPv4, as the master and workers bind it
    for family, _, _, _, addr in infos:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            try:
                s.connect(addr)
                return s.getsockname()[0]
            except OSError:
                continue
    raise SparkConfigError(f"no local address routes to the Spark master {host}:{port}; pass --driver-host")


def driver_network(master: str, *, host: str | None = None, bind: str | None = None, port: int | None = None,
                   block_manager_port: int | None = None,
                   route: Callable[[str, int], str] = local_address_towards) -> dict[str, str]:
    """Driver address settings. Local mode: 127.0.0.1. Standalone master: the local address that routes to the
    master. Explicit values win (`host` is what executors connect to, `bind` where the driver listens: differ
    behind NAT; `bind` defaults to `host`, as in Spark); fixed ports for firewalls (0 or None: any free port)."""
    if host is None:
        host = route(*master_host_port(master)) if is_cluster_master(master) else "127.0.0.1"
    conf = {"spark.driver.host": host, "spark.driver.bindAddress": bind or host}
    if port:
        conf["spark.driver.port"] = str(port)
    if block_manager_port:
        conf["spark.driver.blockManager.port"] = str(block_manager_port)
    return conf


def _project_files(root: Path = PROJECT_ROOT) -> list[Path]:
    """`core/**/*.py` plus core's package data as pyproject.toml declares it (the alias word lists)."""
    files = {p for p in (root / "core").rglob("*.py") if "__pycache__" not in p.parts}
    try:
        import tomllib
        with open(root / "pyproject.toml", "rb") as f:
            data = tomllib.load(f).get("tool", {}).get("setuptools", {}).get("package-data", {})
    except (OSError, ValueError):
        data = {}
    for package, patterns in data.items():
        if package == "core" or package.startswith("core."):
            for pattern in patterns:
                files.update(p for p in (root / package.replace(".", "/")).glob(pattern) if p.is_file())
    return sorted(files)


def project_zip(cache_dir: Path | str | None = None, root: Path = PROJECT_ROOT) -> Path:
    """The project's Python code (`core/**/*.py` and its package data) as a zip for the executors' sys.path (`addPyFile`).

    Built once per version: the name carries a digest of every file's path and bytes, so an unchanged checkout
    reuses the cached zip and any edit makes a new one. Deterministic bytes (sorted, fixed timestamps); written to
    a temporary name and renamed, so a concurrent builder never sees half a zip."""
    files = _project_files(root)
    digest = hashlib.sha256()
    for f in files:
        rel = f.relative_to(root).as_posix().encode()
        data = f.read_bytes()
        digest.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big") + data)
    cache = Path(cache_dir) if cache_dir else _cache_home() / "archivist" / "spark-pyfiles"
    out = cache / f"archivist-core-{digest.hexdigest()[:16]}.zip"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            info = zipfile.ZipInfo(f.relative_to(root).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, f.read_bytes())
    os.replace(tmp, out)
    return out


def _cache_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg else Path.home() / ".cache"


def no_worker_message(master: str) -> str:
    return f"no Spark worker is available at {master}: start a worker or use --master local[*]"
