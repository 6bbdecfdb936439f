"""The package's launcher environment (installer/files/archivist-env.sh): Java is checked before Spark runs, with
one line saying what to install, and scratch files go to the user's cache instead of /tmp. Runs the real file
with /bin/sh against fake JDK folders (only a `release` file and a `bin/java`)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ENV = Path(__file__).resolve().parents[3] / "installer" / "files" / "archivist-env.sh"


def fake_jdk(tmp_path: Path, major: str) -> Path:
    home = tmp_path / f"jdk-{major}"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{major}.0.9"\n')
    return home


def check(tmp_path: Path, java_home: str) -> subprocess.CompletedProcess:
    """Source the file with JAVA_HOME set, then run the check as the launcher does."""
    script = f'. "{ENV}"; archivist_java_check; echo "rc=$? JAVA_HOME=${{JAVA_HOME:-}} TMPDIR=${{TMPDIR:-}}"'
    return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "JAVA_HOME": java_home})


@pytest.mark.parametrize("major", ["17", "21"])
def test_supported_java_passes_silently(tmp_path: Path, major: str):
    (tmp_path / "home").mkdir()
    jdk = fake_jdk(tmp_path, major)
    r = check(tmp_path, str(jdk))
    assert r.stderr == "" and f"rc=0 JAVA_HOME={jdk} " in r.stdout


def test_unsupported_java_names_version_and_what_to_install(tmp_path: Path):
    (tmp_path / "home").mkdir()
    jdk = fake_jdk(tmp_path, "11")
    r = check(tmp_path, str(jdk))
    assert "rc=1" in r.stdout
    assert r.stderr.strip().replace("\n", " ") == (
        f"archivist: Spark needs Java 17 or 21, but {jdk} is Java 11: install openjdk-17-jre-headless or "
        "openjdk-21-jre-headless, or point JAVA_HOME at one")


def test_scratch_files_go_to_the_users_cache_not_tmp(tmp_path: Path):
    (tmp_path / "home").mkdir()
    r = check(tmp_path, str(fake_jdk(tmp_path, "21")))
    tmp = tmp_path / "home" / ".cache" / "archivist" / "tmp"
    assert r.stdout.strip().endswith(f"TMPDIR={tmp}") and tmp.is_dir() and (tmp.stat().st_mode & 0o777) == 0o700
