"""Private runtime files, the shared-secret file, and the insecure-master warning (no JVM)."""
from __future__ import annotations

import os
import stat

import pytest

from core.pipeline.security import (SparkSecurityError, auth_conf, insecure_master_warning, is_loopback_host,
                                    private_dir, properties_text, read_secret, refusal_message, runtime_dir,
                                    touch_private, write_private)
from core.pipeline.session import SparkSettings

UID = os.getuid()
OTHER = UID + 4242   # "someone else": the owner checks compare with the uid they are given
SECRET = "0123456789abcdef0123456789abcdef"


def mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


# ---------------------------------------------------------------- private folders

def test_private_dir_is_created_0700(tmp_path):
    old = os.umask(0)
    try:
        d = private_dir(tmp_path / "rt")
    finally:
        os.umask(old)
    assert d.is_dir() and mode(d) == 0o700


def test_existing_own_folder_is_tightened(tmp_path):
    (tmp_path / "rt").mkdir(mode=0o755)
    os.chmod(tmp_path / "rt", 0o755)
    private_dir(tmp_path / "rt")
    assert mode(tmp_path / "rt") == 0o700


def test_folder_of_someone_else_is_refused(tmp_path):
    (tmp_path / "rt").mkdir(mode=0o700)
    with pytest.raises(SparkSecurityError, match=rf"belongs to user {UID}, not to you \({OTHER}\)"):
        private_dir(tmp_path / "rt", uid=OTHER)


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_folder_chowned_to_someone_else_is_refused(tmp_path):
    (tmp_path / "rt").mkdir(mode=0o700)
    os.chown(tmp_path / "rt", 4242, 4242)
    with pytest.raises(SparkSecurityError, match="belongs to user 4242, not to you"):
        private_dir(tmp_path / "rt")


@pytest.mark.parametrize("bits", [0o770, 0o707, 0o777, 0o1777])
def test_folder_writable_by_others_is_refused(tmp_path, bits):
    (tmp_path / "rt").mkdir()
    os.chmod(tmp_path / "rt", bits)
    with pytest.raises(SparkSecurityError, match=f"writable by others \\(mode {bits:04o}\\).*chmod 700"):
        private_dir(tmp_path / "rt")
    assert mode(tmp_path / "rt") == bits    # refused, not "fixed" behind the user's back


def test_planted_symlink_is_never_followed(tmp_path):
    target = tmp_path / "attacker"
    target.mkdir(mode=0o700)
    (tmp_path / "rt").symlink_to(target)
    with pytest.raises(SparkSecurityError, match="is a symlink: refusing to follow it"):
        private_dir(tmp_path / "rt")
    (tmp_path / f"archivist-spark-{UID}").symlink_to(target)   # the predictable /tmp path, planted
    with pytest.raises(SparkSecurityError, match=f"archivist-spark-{UID} is a symlink"):
        runtime_dir({}, tmp=str(tmp_path))
    assert list(target.iterdir()) == []


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "rt").write_text("x")
    with pytest.raises(SparkSecurityError, match="cannot open .*rt: Not a directory"):
        private_dir(tmp_path / "rt")


def test_runtime_dir_prefers_a_private_xdg_runtime_dir(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    d = runtime_dir({"XDG_RUNTIME_DIR": str(xdg)}, tmp=str(tmp_path / "tmp"))
    assert d == xdg / "archivist-spark" and mode(d) == 0o700


def test_runtime_dir_falls_back_to_a_checked_tmp_folder(tmp_path):
    (tmp_path / "tmp").mkdir()
    expected = tmp_path / "tmp" / f"archivist-spark-{UID}"
    assert runtime_dir({}, tmp=str(tmp_path / "tmp")) == expected and mode(expected) == 0o700
    shared = tmp_path / "shared-xdg"
    shared.mkdir()
    os.chmod(shared, 0o755)                           # not private: not used
    assert runtime_dir({"XDG_RUNTIME_DIR": str(shared)}, tmp=str(tmp_path / "tmp")) == expected
    assert not (shared / "archivist-spark").exists()
    assert runtime_dir({"XDG_RUNTIME_DIR": "relative"}, tmp=str(tmp_path / "tmp")) == expected
    # the predictable tmp path planted by someone else: refused, one line
    os.chmod(expected, 0o777)
    with pytest.raises(SparkSecurityError, match="writable by others"):
        runtime_dir({}, tmp=str(tmp_path / "tmp"))


def test_private_files_are_0600_and_never_follow_symlinks(tmp_path):
    old = os.umask(0)
    try:
        p = write_private(tmp_path / "a.properties", "k=v\n")
        log = touch_private(tmp_path / "spark.log")
    finally:
        os.umask(old)
    assert mode(p) == 0o600 and p.read_text() == "k=v\n" and mode(log) == 0o600
    log.write_text("kept\n")
    os.chmod(log, 0o644)
    touch_private(log)
    assert log.read_text() == "kept\n" and mode(log) == 0o600
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(SparkSecurityError, match="cannot write .*link"):
        write_private(tmp_path / "link", "overwritten")
    with pytest.raises(SparkSecurityError, match="cannot create .*link"):
        touch_private(tmp_path / "link")
    assert victim.read_text() == "precious"


def test_session_conf_writes_private_log_files(tmp_path):
    s = SparkSettings(log_dir=str(tmp_path / "logs"))
    conf = s.conf()
    assert mode(tmp_path / "logs") == 0o700
    assert mode(tmp_path / "logs" / "log4j2.properties") == 0o600
    assert mode(tmp_path / "logs" / "spark.log") == 0o600
    assert not any("secret" in k or "authenticate" in k for k in conf)
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)
    with pytest.raises(SparkSecurityError, match="writable by others"):
        SparkSettings(log_dir=str(tmp_path / "open")).conf()


# ---------------------------------------------------------------- the secret file

def secret_file(tmp_path, text=SECRET + "\n", bits=0o600, name="spark.secret"):
    p = tmp_path / name
    p.write_text(text)
    os.chmod(p, bits)
    return p


def test_secret_is_read_from_a_0600_file(tmp_path):
    assert read_secret(secret_file(tmp_path)) == SECRET
    assert read_secret(secret_file(tmp_path, bits=0o400, name="ro")) == SECRET


@pytest.mark.parametrize("bits", [0o644, 0o640, 0o604, 0o620, 0o666])
def test_secret_readable_or_writable_by_others_is_refused(tmp_path, bits):
    p = secret_file(tmp_path, bits=bits)
    with pytest.raises(SparkSecurityError, match=f"readable or writable by others \\(mode {bits:04o}\\): run chmod 600"):
        read_secret(p)


def test_bad_secret_files_are_refused(tmp_path):
    with pytest.raises(SparkSecurityError, match="does not exist"):
        read_secret(tmp_path / "missing")
    with pytest.raises(SparkSecurityError, match=f"belongs to user {UID}, not to you"):
        read_secret(secret_file(tmp_path), uid=OTHER)
    (tmp_path / "link").symlink_to(secret_file(tmp_path))
    with pytest.raises(SparkSecurityError, match="is a symlink"):
        read_secret(tmp_path / "link")
    with pytest.raises(SparkSecurityError, match="shorter than 16 characters"):
        read_secret(secret_file(tmp_path, "short\n", name="s"))
    with pytest.raises(SparkSecurityError, match="shorter than 16 characters"):
        read_secret(secret_file(tmp_path, "", name="empty"))
    (tmp_path / "bin").write_bytes(b"\xff\xfe" * 20)
    os.chmod(tmp_path / "bin", 0o600)
    with pytest.raises(SparkSecurityError, match="is not text"):
        read_secret(tmp_path / "bin")
    (tmp_path / "dir").mkdir(mode=0o700)
    with pytest.raises(SparkSecurityError, match="not a regular file"):
        read_secret(tmp_path / "dir")


def test_auth_conf(tmp_path):
    assert auth_conf(None, False) == {}
    assert auth_conf(SECRET, False) == {"spark.authenticate": "true", "spark.authenticate.secret": SECRET}
    assert auth_conf(SECRET, True)["spark.network.crypto.enabled"] == "true"
    with pytest.raises(SparkSecurityError, match="encryption needs the cluster's shared secret"):
        auth_conf(None, True)
    s = SparkSettings(master="spark://10.0.0.5:7077", secret_file=str(secret_file(tmp_path)), encrypt=True)
    assert s.secret_conf() == {"spark.authenticate": "true", "spark.authenticate.secret": SECRET,
                               "spark.network.crypto.enabled": "true"}
    assert s.security_warning() is None


def test_properties_text_escapes():
    assert properties_text({"b": "x=y:z #!", "a": "back\\slash"}) == "a=back\\\\slash\nb=x\\=y\\:z\\ \\#\\!\n"


# ---------------------------------------------------------------- warnings and refusals

def test_loopback_hosts():
    for h in ("127.0.0.1", "127.1.2.3", "localhost", "[::1]", "::1"):
        assert is_loopback_host(h), h
    for h in ("10.0.0.5", "0.0.0.0", "example.org", "fe80::1"):
        assert not is_loopback_host(h), h


def test_insecure_master_warning():
    assert insecure_master_warning("local[*]", secret=False, encrypt=False) is None
    assert insecure_master_warning("spark://127.0.0.1:7077", secret=False, encrypt=False) is None
    w = insecure_master_warning("spark://10.0.0.5:7077", secret=False, encrypt=False)
    assert w == ("warning: the Spark master spark://10.0.0.5:7077 is not on this machine and the connection has no "
                 "authentication (--spark-secret-file) and no encryption (--spark-encrypt): anyone on that network "
                 "can run code on the cluster or read the data")
    assert "\n" not in w
    w = insecure_master_warning("spark://127.0.0.1:7077,m2.example:7077", secret=True, encrypt=False)
    assert "no encryption (--spark-encrypt)" in w and "authentication" not in w
    assert insecure_master_warning("spark://10.0.0.5:7077", secret=True, encrypt=True) is None
    assert SparkSettings(master="spark://10.0.0.5:7077").security_warning().startswith("warning: the Spark master")


def test_refusal_messages():
    url = "spark://10.0.0.5:7077"
    sasl = ["org.apache.spark.SparkException: Exception thrown in awaitResult: ",
            "java.lang.RuntimeException: java.lang.IllegalStateException: Expected SaslMessage, received something "
            "else (maybe your client does not have SASL enabled?)"]
    assert refusal_message(url, sasl, with_secret=False) == (
        "the Spark master at spark://10.0.0.5:7077 requires authentication: give its shared secret with "
        "--spark-secret-file (or [spark] secret_file)")
    closed = ["org.apache.spark.SparkException: Exception thrown in awaitResult: ",
              "org.apache.spark.SparkException: Message is dropped because Outbox is stopped"]
    assert "refused this driver's authentication: its secret differs" in refusal_message(url, closed,
                                                                                          with_secret=True)
    refused = ["java.io.IOException: Failed to connect to /10.0.0.5:7077",
               "java.net.ConnectException: finishConnect(..) failed with error(-111): Connection refused"]
    assert refusal_message(url, refused, with_secret=True) == (
        "no Spark master answers at spark://10.0.0.5:7077 (connection refused): start one or check --master")
    assert "cannot be reached (timed out)" in refusal_message(
        url, ["org.apache.spark.rpc.RpcTimeoutException: Futures timed out after [15 seconds]"], with_secret=False)
    assert refusal_message(url, ["java.lang.Weird: something\n\tat x"], with_secret=False) == (
        "cannot connect to the Spark master at spark://10.0.0.5:7077: java.lang.Weird: something")
