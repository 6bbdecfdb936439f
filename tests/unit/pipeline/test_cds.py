"""The class-data archive's rule (core/pipeline/cds.py) without a Spark JVM: the key, when an archive is used, "off",
the maker's lock, its refusal of a file the JVM does not accept, and the cache's clean-up."""
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from core.pipeline import cds, cds_make, jvm
from core.pipeline.session import SparkSettings

JAVA = pytest.mark.skipif(cds.java_binary() is None, reason="no java on PATH (Java 17 is needed for Spark)")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A SPARK_HOME of three small jars; the archive in the cache folder (ARCHIVIST_SPARK_CDS unset)."""
    h = tmp_path / "spark"
    (h / "jars").mkdir(parents=True)
    for name in ("a.jar", "b.jar", "slf4j-api.jar"):
        (h / "jars" / name).write_bytes(b"jar " + name.encode())
    monkeypatch.setenv("SPARK_HOME", str(h))
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv(cds.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return h


def conf(options="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC", memory="2g"):
    return {"spark.driver.extraJavaOptions": options, "spark.driver.memory": memory}


def fake_archive(path, key, size=cds.MIN_SIZE, magic=cds.DYNAMIC_MAGIC):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(magic + bytes(size - len(magic)))
    cds.sidecar(path).write_text(json.dumps({"key": key, "size": size}))


@JAVA
def test_key_follows_the_jars_the_class_path_and_the_options_that_matter(home, monkeypatch):
    k = cds.key(conf())
    assert k == cds.key(conf())
    # tuning flags and memory below 32 GiB: the JVM accepts the archive with them, so the key stays
    assert cds.key(conf("-XX:TieredStopAtLevel=1 -Xlog:class+load=info:file=/tmp/x -XX:+UseG1GC", "512m")) == k
    # options the JVM checks against the archive
    assert cds.key(conf("-XX:TieredStopAtLevel=1 -XX:-UseCompressedOops")) != k
    assert cds.key(conf(memory="40g")) != k           # no compressed oops above 32 GiB
    assert cds.key({**conf(), "spark.driver.extraClassPath": "/opt/x.jar"}) != k
    # options from the environment count as the driver's own: tuning flags keep the key (and `java -version`,
    # which prints "Picked up JAVA_TOOL_OPTIONS: ..." beside them, is read without them), the rest change it
    for name in cds.JAVA_ENV_OPTIONS:
        monkeypatch.setenv(name, "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        cds._version_cache.clear()
        assert cds.key(conf()) == k, name
        assert "Picked up" not in cds.java_version(cds.java_binary())
        monkeypatch.setenv(name, "-XX:-UseCompressedOops")
        assert cds.key(conf()) != k, name
        monkeypatch.delenv(name)
    # the jars: one more, one changed in size, one touched
    (home / "jars" / "c.jar").write_bytes(b"new")
    k2 = cds.key(conf())
    assert k2 != k
    (home / "jars" / "c.jar").write_bytes(b"newer")
    k3 = cds.key(conf())
    assert k3 != k2
    st = (home / "jars" / "a.jar").stat()
    os.utime(home / "jars" / "a.jar", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cds.key(conf()) != k3
    k4 = cds.key(conf())
    monkeypatch.setenv("SPARK_CONF_DIR", str(home / "other-conf"))
    assert cds.key(conf()) != k4
    monkeypatch.delenv("SPARK_CONF_DIR")
    assert cds.key(conf()) == k4
    # and the java that will run: a JAVA_HOME whose java says it is another version
    fake = home / "jdk" / "bin"
    fake.mkdir(parents=True)
    (fake / "java").write_text('#!/bin/sh\necho "openjdk version \\"21.0.1\\"" >&2\n')
    (fake / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home / "jdk"))
    assert cds.java_version(cds.java_binary()) == 'openjdk version "21.0.1"'
    assert cds.key(conf()) != k4


@JAVA
def test_a_whole_archive_goes_on_the_command_line_and_a_damaged_one_never(home):
    c = conf()
    path, k, why = cds.state(c)
    assert path == home.parent / "cache" / "archivist" / "spark-cds" / f"driver-{k}.jsa"
    assert why.startswith("missing") and cds.launch_conf(c) == c
    fake_archive(path, k)
    assert cds.state(c)[2] is None
    assert cds.launch_conf(c)["spark.driver.extraJavaOptions"] == f"{c['spark.driver.extraJavaOptions']} " \
                                                                   f"-XX:SharedArchiveFile={path}"
    # truncated (the size the sidecar names is not the file's)
    with open(path, "r+b") as f:
        f.truncate(cds.MIN_SIZE - 4096)
    assert "damaged" in cds.state(c)[2] and cds.launch_conf(c) == c
    # a maker killed between the archive and its sidecar: no sidecar, not trusted
    fake_archive(path, k)
    cds.sidecar(path).unlink()
    assert cds.state(c)[2].startswith("missing") and cds.launch_conf(c) == c
    # unreadable sidecar, bad magic, another key
    fake_archive(path, k)
    cds.sidecar(path).write_text("{not json")
    assert cds.state(c)[2].startswith("unreadable") and cds.launch_conf(c) == c
    fake_archive(path, k, magic=b"\0\0\0\0")
    assert "magic" in cds.state(c)[2] and cds.launch_conf(c) == c
    fake_archive(path, "another key")
    assert "another" in cds.state(c)[2] and cds.launch_conf(c) == c
    # the user's own class-data options are left alone
    fake_archive(path, k)
    own = conf("-XX:TieredStopAtLevel=1 -Xshare:off")
    assert cds.launch_conf(own) == own and cds.start_maker(own) is None


@JAVA
def test_off_adds_nothing_and_starts_no_maker(home, monkeypatch):
    c = conf()
    path, k, _ = cds.state(c)
    fake_archive(path, k)
    assert cds.launch_conf(c) != c
    monkeypatch.setenv(cds.ENV, "off")
    assert cds.state(c) == (None, None, "off")
    assert cds.launch_conf(c) == c
    assert cds.start_maker(c) is None
    monkeypatch.setenv(cds.ENV, "OFF ")
    assert cds.launch_conf(c) == c


@JAVA
def test_a_path_in_the_variable_is_the_archive(home, tmp_path, monkeypatch):
    target = tmp_path / "mine" / "spark.jsa"
    monkeypatch.setenv(cds.ENV, str(target))
    c = conf()
    path, k, why = cds.state(c)
    assert path == target and why.startswith("missing")
    fake_archive(target, k)
    assert cds.launch_conf(c)["spark.driver.extraJavaOptions"].endswith(f"-XX:SharedArchiveFile={target}")


def test_the_jvm_is_not_relaunched_for_the_archive_alone():
    c = SparkSettings().conf()
    with_archive = {**c, "spark.driver.extraJavaOptions": c["spark.driver.extraJavaOptions"]
                    + " -XX:SharedArchiveFile=/some/where/driver.jsa"}
    assert jvm.launch_environment(with_archive) == jvm.launch_environment(c)
    other = {**c, "spark.driver.extraJavaOptions": c["spark.driver.extraJavaOptions"] + " -XX:+UseG1GC"}
    assert jvm.differences(jvm.launch_environment(c), jvm.launch_environment(other)) == [
        f"spark.driver.extraJavaOptions: {c['spark.driver.extraJavaOptions']!r} -> "
        f"{other['spark.driver.extraJavaOptions']!r}"]


@JAVA
def test_one_maker_at_a_time(home, tmp_path):
    path = tmp_path / "a" / "driver-k.jsa"
    with cds.maker_lock(path, wait=False) as held:
        assert held
        assert cds_make.make_archive(path, "k", "", wait=False) == "busy"
    assert not path.exists()


@JAVA
def test_a_file_the_jvm_refuses_is_never_put_in_place(home, tmp_path, monkeypatch):
    """The maker's last check is the real JVM's (-Xshare:on fails on a file it cannot map)."""
    path = tmp_path / "a" / "driver-k.jsa"

    def dump(tmp, options, memory):
        tmp.write_bytes(cds.DYNAMIC_MAGIC + os.urandom(cds.MIN_SIZE))   # the right magic, garbage after it
        return cds.accepted(tmp, str(home / "jars" / "a.jar"), options)
    monkeypatch.setattr(cds_make, "_dump", dump)
    out = cds_make.make_archive(path, "k", "-XX:TieredStopAtLevel=1", wait=True)
    assert out.startswith("failed: the JVM refuses it"), out
    # nothing half-made left; the failure is noted, so that the sessions' warm-ups do not try again for this key
    assert sorted(p.name for p in path.parent.iterdir()) == ["driver-k.jsa.failed.json", "driver-k.jsa.lock"]
    assert cds.failed_before(path, "k").startswith("the JVM refuses it") and cds.failed_before(path, "k2") is None


@JAVA
def test_a_made_archive_replaces_the_other_keys(home, tmp_path, monkeypatch):
    d = cds.cache_dir()
    for k in ("old1", "old2"):
        fake_archive(d / f"driver-{k}.jsa", k)
    (d / "driver-old1.jsa.x1.tmp").write_bytes(b"left by a killed maker")
    monkeypatch.setattr(cds_make, "_dump", lambda tmp, options, memory: shutil.copyfile(d / "driver-old1.jsa", tmp)
                        and None)
    with cds.maker_lock(d / "driver-old2.jsa", wait=False):   # a maker of that key is at work: left alone
        assert cds_make.make_archive(d / "driver-new.jsa", "new", "") == "made"
    names = sorted(p.name for p in d.iterdir())
    assert names == ["driver-new.jsa", "driver-new.jsa.json", "driver-new.jsa.lock", "driver-old1.jsa.lock",
                     "driver-old2.jsa", "driver-old2.jsa.json", "driver-old2.jsa.lock"]
    assert cds.check(d / "driver-new.jsa", "new") is None
    assert cds_make.make_archive(d / "driver-new.jsa", "new", "") == "present"


@JAVA
def test_the_maker_starts_apart_and_only_when_needed(home, tmp_path, monkeypatch):
    """start_maker runs `python -m core.pipeline.cds_make` niced, in its own session, and returns at once; not when
    a whole archive is there, nor again for a key whose maker failed (a stand-in python records its command)."""
    record = tmp_path / "argv"
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\necho "$$ $(ps -o sid= -p $$) $(ps -o ni= -p $$) $*" > {record}\n')
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    c = conf()
    path, k, _ = cds.state(c)
    proc = cds.start_maker(c)
    assert proc.wait(60) == 0
    pid, sid, nice, *argv = record.read_text().split()
    assert sid == pid and int(nice) >= 10                    # its own session, low priority
    assert " ".join(argv) == f"-m core.pipeline.cds_make --path {path} --key {k} " \
                             f"--options={c['spark.driver.extraJavaOptions']} --memory 2g"
    record.unlink()
    path.parent.mkdir(parents=True)
    cds.failure_note(path).write_text(json.dumps({"key": k, "why": "the JVM refuses it"}))
    assert cds.start_maker(c) is None
    cds.failure_note(path).unlink()
    fake_archive(path, k)
    assert cds.start_maker(c) is None and cds.start_maker(None) is None
    assert not record.exists()


@JAVA
def test_a_path_spark_would_split_is_not_used(home, tmp_path, monkeypatch):
    target = tmp_path / "my archives" / "spark.jsa"
    monkeypatch.setenv(cds.ENV, str(target))
    c = conf()
    fake_archive(target, cds.state(c)[1])
    assert cds.state(c)[2] is None and cds.launch_conf(c) == c


def test_only_the_archive_option_is_left_out():
    assert cds.without_archive('-Dx="a b" -XX:+UseSerialGC') == '-Dx="a b" -XX:+UseSerialGC'
    assert cds.without_archive('-Dx="a b" -XX:SharedArchiveFile=/c/d.jsa -Xss1m') == '-Dx="a b" -Xss1m'
    assert cds.without_archive("-XX:SharedArchiveFile=/c/d.jsa") == ""
    assert cds.without_archive(None) is None


@JAVA
def test_the_maker_reads_what_the_session_hands_it(home, capsys):
    """cds_make's command line as start_maker writes it; a key that changed since (the jars were replaced while the
    maker started) makes nothing."""
    options = "-XX:MaxDirectMemorySize=1g -XX:TieredStopAtLevel=1"
    path, k, _ = cds.state(conf(options))
    assert cds_make.main(["--path", str(path), "--key", "not-" + k, f"--options={options}", "--memory", "2g"]) == 1
    assert f"key changed since the session asked (not-{k} -> {k}): not made" in capsys.readouterr().out
    assert not path.parent.exists() or not any(path.parent.iterdir())
    assert cds_make.main(["--status"]) == 0
    assert capsys.readouterr().out.endswith(": missing: " + str(cds.sidecar(cds.state(
        SparkSettings().conf())[0])) + "\n")


def test_a_path_with_a_blank_or_a_quote_is_not_put_into_jvm_options():
    """extraJavaOptions and JAVA_TOOL_OPTIONS are split on blanks and quotes: such a path would become two options."""
    assert cds.splits_safely(Path("/home/ana/.cache/archivist/spark-cds/driver-1a2b.jsa"))
    for bad in ("/home/ana maria/driver.jsa", "/home/o'neil/driver.jsa", '/tmp/"x"/driver.jsa', "/tmp/a\\b.jsa",
                "/tmp/tab\there.jsa"):
        assert not cds.splits_safely(Path(bad)), bad
