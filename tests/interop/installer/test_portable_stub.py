"""The portable file's packing and self-extraction (installer/portable-pack.sh + files/portable-stub.sh) with a tiny
fake app, no root, in seconds: reproducible bytes, one unpack into the user's cache reused afterwards, a cut or
corrupted file refused with exit 2 leaving nothing, two first starts at once, nothing written through TMPDIR.
The whole portable file's smoke test (chroots, Spark, the window) is `make -C installer smoke-portable`."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "installer" / "test-portable-stub.sh"


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd is not installed (scripts/system-packages.txt)")
def test_portable_stub_packs_unpacks_once_and_refuses_damaged_files():
    p = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "test-portable-stub: OK" in p.stdout and "FAIL" not in p.stderr
