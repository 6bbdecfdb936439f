"""Spark beyond one machine, safely: private runtime files, the cluster's shared secret, and the insecure-master warning.

A standalone Spark master without authentication runs any code anyone on its network sends it. So:
- per-user runtime files (the driver's log4j config and log, the daemons' properties) live in a private folder:
  `$XDG_RUNTIME_DIR/archivist-spark` when that is private, else `<tmp>/archivist-spark-<uid>`, created 0700;
  an existing folder is used only if it is a real folder (not a symlink) owned by this user and not writable by
  anyone else; files in it are created 0600 without following symlinks;
- the shared secret (`spark.authenticate`) is read from a file that only its owner can read, never from the command
  line or the environment; it reaches Spark through py4j (driver) or a 0600 properties file (daemons), never argv.
"""
from __future__ import annotations

import ipaddress
import os
import stat
import tempfile
from pathlib import Path

MIN_SECRET_LENGTH = 16


class SparkSecurityError(ValueError):
    """Runtime folder or secret file is unsafe; the message is one line for the user."""


def _check_dir(path: Path, fd: int, uid: int) -> None:
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode):
        raise SparkSecurityError(f"{path} is not a folder: refusing to keep Spark's runtime files there")
    if st.st_uid != uid:
        raise SparkSecurityError(f"{path} belongs to user {st.st_uid}, not to you ({uid}): refusing to use it "
                                 "for Spark's runtime files (someone may have planted it); remove it or set "
                                 "XDG_RUNTIME_DIR")
    if st.st_mode & 0o022:
        raise SparkSecurityError(f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):04o}): refusing "
                                 f"to use it for Spark's runtime files; run chmod 700 {path}")


def private_dir(path: Path | str, *, uid: int | None = None) -> Path:
    """`path` as a private folder: created 0700 if missing; if present, it must be a real folder (a symlink is
    refused, never followed) owned by `uid` and not group/world-writable. Group/world read bits are removed."""
    path = Path(path)
    uid = os.getuid() if uid is None else uid
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise SparkSecurityError(f"cannot create {path}: its parent folder does not exist") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        if os.path.islink(path):
            raise SparkSecurityError(f"{path} is a symlink: refusing to follow it for Spark's runtime files; "
                                     "remove it") from None
        raise SparkSecurityError(f"cannot open {path}: {e.strerror}") from None
    try:
        _check_dir(path, fd, uid)
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def runtime_dir(env: dict[str, str] | None = None, *, uid: int | None = None, tmp: str | None = None) -> Path:
    """The per-user folder for Spark's runtime files (see the module docstring)."""
    env = os.environ if env is None else env
    uid = os.getuid() if uid is None else uid
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        try:
            fd = os.open(xdg, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                st = os.fstat(fd)
                usable = st.st_uid == uid and not st.st_mode & 0o077
            finally:
                os.close(fd)
            if usable:
                return private_dir(Path(xdg) / "archivist-spark", uid=uid)
    return private_dir(Path(tmp or tempfile.gettempdir()) / f"archivist-spark-{uid}", uid=uid)


def write_private(path: Path | str, text: str) -> Path:
    """Write `text` to a 0600 file (created or truncated; a symlink at `path` is refused)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise SparkSecurityError(f"cannot write {path}: {e.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(fd, 0o600)
        f.write(text)
    return path


def touch_private(path: Path | str) -> Path:
    """Make sure `path` exists as a 0600 file without truncating it (log files the JVM appends to)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise SparkSecurityError(f"cannot create {path}: {e.strerror}") from None
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def read_secret(path: Path | str, *, uid: int | None = None) -> str:
    """The cluster's shared secret from `path`: a regular file owned by this user that nobody else can read or
    write (mode 0600 or 0400), at least MIN_SECRET_LENGTH characters on its first line."""
    path = Path(path)
    uid = os.getuid() if uid is None else uid
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SparkSecurityError(f"Spark secret file {path} does not exist") from None
    except OSError as e:
        if os.path.islink(path):
            raise SparkSecurityError(f"Spark secret file {path} is a symlink: give the file itself") from None
        raise SparkSecurityError(f"cannot read the Spark secret file {path}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise SparkSecurityError(f"Spark secret file {path} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_uid != uid:
            raise SparkSecurityError(f"Spark secret file {path} belongs to user {st.st_uid}, not to you ({uid})")
        if st.st_mode & 0o077:
            raise SparkSecurityError(f"Spark secret file {path} is readable or writable by others (mode "
                                     f"{stat.S_IMODE(st.st_mode):04o}): run chmod 600 {path}")
        data = f.read(4096)
    try:
        lines = data.decode("utf-8").strip().splitlines()
    except UnicodeDecodeError:
        raise SparkSecurityError(f"Spark secret file {path} is not text (use e.g. `openssl rand -hex 32`)") from None
    secret = lines[0].strip() if lines else ""
    if len(secret) < MIN_SECRET_LENGTH:
        raise SparkSecurityError(f"Spark secret in {path} is shorter than {MIN_SECRET_LENGTH} characters "
                                 "(make one with `openssl rand -hex 32`)")
    if any(ord(c) < 0x20 or c == "\x7f" for c in secret):
        raise SparkSecurityError(f"Spark secret in {path} contains control characters")
    return secret


def auth_conf(secret: str | None, encrypt: bool) -> dict[str, str]:
    """Spark settings for authentication with `secret` and AES network encryption (which needs the secret)."""
    if encrypt and not secret:
        raise SparkSecurityError("Spark network encryption needs the cluster's shared secret: "
                                 "give --spark-secret-file (or [spark] secret_file)")
    if not secret:
        return {}
    conf = {"spark.authenticate": "true", "spark.authenticate.secret": secret}
    if encrypt:
        conf["spark.network.crypto.enabled"] = "true"
    return conf


def _escape_properties(s: str) -> str:
    out = []
    for ch in s:
        if ch in "\\=:#! ":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7e:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def properties_text(conf: dict[str, str]) -> str:
    """Java properties text (Spark's --properties-file) for `conf`."""
    return "".join(f"{_escape_properties(k)}={_escape_properties(v)}\n" for k, v in sorted(conf.items()))


def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback literals (no DNS lookup: a name is not loopback unless it says so)."""
    h = host.strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def insecure_master_warning(master: str, *, secret: bool, encrypt: bool) -> str | None:
    """One line when a non-loopback standalone master is used without authentication or encryption, else None."""
    if not master.startswith("spark://"):
        return None
    hosts = [h.rpartition(":")[0] or h for h in master[len("spark://"):].strip("/").split(",")]
    if all(is_loopback_host(h) for h in hosts):
        return None
    missing = [what for what, ok in (("authentication (--spark-secret-file)", secret),
                                     ("encryption (--spark-encrypt)", encrypt)) if not ok]
    if not missing:
        return None
    return (f"warning: the Spark master {master} is not on this machine and the connection has no "
            f"{' and no '.join(missing)}: anyone on that network can run code on the cluster or read the data")


def refusal_message(master_url: str, causes: list[str], *, with_secret: bool) -> str:
    """One line for a master that refused or did not answer this driver, from the Java exception chain."""
    text = "\n".join(causes)
    if "Expected SaslMessage" in text or "does not have SASL enabled" in text:
        if with_secret:
            return (f"the Spark master at {master_url} refused this driver's authentication: its secret differs "
                    "from the one in --spark-secret-file")
        return (f"the Spark master at {master_url} requires authentication: give its shared secret with "
                "--spark-secret-file (or [spark] secret_file)")
    if "Connection refused" in text:
        return f"no Spark master answers at {master_url} (connection refused): start one or check --master"
    if "timed out" in text.lower() or "RpcTimeoutException" in text or "No route to host" in text:
        return f"the Spark master at {master_url} cannot be reached (timed out): check --master and the firewall"
    if with_secret:
        return (f"the Spark master at {master_url} refused this driver's authentication: its secret differs from "
                "the one in --spark-secret-file, or the master runs without authentication")
    first = next((c for c in reversed(causes) if c.strip()), "unknown error").splitlines()[0]
    return f"cannot connect to the Spark master at {master_url}: {first}"


def _masters(master: str) -> list[tuple[str, int]]:
    out = []
    for hp in master[len("spark://"):].strip("/").split(","):
        host, _, port = hp.rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


def probe_master(jvm, master: str, local_host: str, conf: dict[str, str], timeout_s: int = 15) -> str | None:
    """Ask each standalone master for its endpoint the way Spark's app client does (a client-only RpcEnv with the
    same authentication settings, in the already running JVM). Returns None if one answers, else one line saying
    why not. Spark itself would retry for 60 s and then fail with "Cannot call methods on a stopped SparkContext"."""
    from py4j.protocol import Py4JJavaError
    failures: list[str] = []
    for host, port in _masters(master):
        jconf = jvm.org.apache.spark.SparkConf(False)
        for k, v in {**conf, "spark.rpc.lookupTimeout": f"{timeout_s}s",
                     "spark.rpc.askTimeout": f"{timeout_s}s"}.items():
            jconf.set(k, v)
        config = getattr(getattr(jvm.org.apache.spark.internal.config, "package$"), "MODULE$")
        sm = jvm.org.apache.spark.SecurityManager(jconf, jvm.scala.Option.apply(None), config.AUTH_SECRET_FILE())
        sm.initializeAuth()
        env = getattr(getattr(jvm.org.apache.spark.rpc, "RpcEnv$"), "MODULE$").create(
            "archivist-probe", local_host, 0, jconf, sm, True)
        url = f"spark://{'[' + host + ']' if ':' in host else host}:{port}"
        try:
            env.setupEndpointRefByURI(f"spark://Master@{url[len('spark://'):]}")
            return None
        except Py4JJavaError as e:
            causes, j = [], e.java_exception
            while j is not None and len(causes) < 10:
                causes.append(f"{j.getClass().getName()}: {j.getMessage()}")
                j = j.getCause()
            failures.append(refusal_message(url, causes, with_secret="spark.authenticate.secret" in conf))
        finally:
            env.shutdown()
            env.awaitTermination()
    return failures[0] if failures else None
