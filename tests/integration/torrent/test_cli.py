"""`archivist seed` and `archivist fetch` as processes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_seed_command_serves_fetch_command(community, tmp_path):
    seed = subprocess.Popen([sys.executable, "-m", "core.cli", "seed", "--local", "--json", "--data-dir",
                             str(community.data_dir), "--torrent-dir", str(community.torrent_path.parent),
                             "--state-dir", str(tmp_path / "seed-state"), "--duration", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        first = json.loads(seed.stdout.readline())
        assert first["event"] == "seeding" and first["community_id"] == community.community_id
        assert first["magnet"] == community.magnet and first["port"] > 0
        out = subprocess.run([sys.executable, "-m", "core.cli", "fetch", first["magnet"], "--latest", "--local",
                              "--peer", f"127.0.0.1:{first['port']}", "--data-dir", str(tmp_path / "m"),
                              "--timeout", "60"], capture_output=True, text=True, cwd=ROOT, timeout=90)
        assert out.returncode == 0, out.stderr
        assert "complete: 1 archives" in out.stdout
    finally:
        seed.terminate()
        seed.communicate(timeout=20)
    assert seed.returncode == 0
    assert not (tmp_path / "seed-state" / "running.marker").exists()      # SIGTERM = clean shutdown


def test_fetch_usage_errors(tmp_path):
    out = subprocess.run([sys.executable, "-m", "core.cli", "fetch", "magnet:?xt=urn:btih:" + "ab" * 20,
                          "--latest", "--from", "1", "--to", "2"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "cannot be combined" in out.stderr
    out = subprocess.run([sys.executable, "-m", "core.cli", "fetch", "not-a-magnet", "--local",
                          "--data-dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 1 and "bad-magnet" in out.stderr
