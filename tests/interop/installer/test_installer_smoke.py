"""The whole installer path, per Debian release: build the .deb in a chroot of that release, install it with apt into
a fresh chroot, run the app there (version, reference build, Spark build, PySpark worker probe, member import, GUI
offscreen and on Xvfb, desktop handlers), reinstall, remove and purge it.

Minutes long, needs root, debootstrap and Debian's mirror: runs only with ARCHIVIST_SLOW=1 and
ARCHIVIST_INSTALLER_SMOKE=1 (never in `make test`). Same as `make -C installer deb-SUITE smoke-SUITE`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("ARCHIVIST_SLOW") != "1" or os.environ.get("ARCHIVIST_INSTALLER_SMOKE") != "1",
                       reason="installer smoke: set ARCHIVIST_SLOW=1 and ARCHIVIST_INSTALLER_SMOKE=1"),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("dpkg-deb") is None, reason="needs root on Debian"),
]


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("suite,python", [("bookworm", "3.11"), ("trixie", "3.13")])
def test_deb_installs_and_runs_in_fresh_debian_chroot(suite: str, python: str):
    build = subprocess.run(["bash", str(ROOT / "installer" / "build-deb.sh"), suite], capture_output=True, text=True,
                           timeout=1800)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    info = dict(line.split("=", 1) for line in (ROOT / f"installer/build/build-info-{suite}.txt").read_text().split())
    assert (info["suite"], info["python"]) == (suite, python)
    deb = ROOT / "installer" / "build" / info["deb"]
    assert deb.stat().st_size == int(info["deb_bytes"])
    smoke = subprocess.run(["bash", str(ROOT / "installer" / "smoke.sh"), suite, str(deb)], capture_output=True,
                           text=True, timeout=1800)
    out = smoke.stdout + smoke.stderr
    assert smoke.returncode == 0, out[-6000:]
    assert re.search(rf"^smoke: \[\d+s\] PASS {suite}", smoke.stdout, re.M), out[-3000:]
    assert "spark-probe OK" in out and "window visible after" in out and "byte-identical" in out
