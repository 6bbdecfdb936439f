"""`archivist spark-build` takes the arguments of `archivist build` and writes the same bytes (its own process,
its own SparkSession, as a user runs it)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from core.cli import main
from core.synth import synthesize

ROOT = Path(__file__).resolve().parents[3]


def test_spark_build_cli_equals_build_cli(tmp_path, capsys):
    s = synthesize(tmp_path / "m.sqlite", messages=2000, weeks=3, channels=2, seed=4)
    common = ["--db", s.path, "--community-id", s.community_id, "--end", str(s.end), "--json"]
    for t in s.topics:
        common += ["--topic", t]
    assert main(["build", *common, "--data-dir", str(tmp_path / "ref"), "--torrent-dir", str(tmp_path / "ref-t")]) == 0
    ref = json.loads(capsys.readouterr().out)
    out = subprocess.run([sys.executable, "-m", "core.cli", "spark-build", *common, "--data-dir",
                          str(tmp_path / "spark"), "--torrent-dir", str(tmp_path / "spark-t")],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["infohash"] == ref["infohash"] and got["new_archive_ids"] == ref["new_archive_ids"]
    for f in ("data", "index"):
        assert (tmp_path / "spark" / s.community_id / f).read_bytes() == (tmp_path / "ref" / s.community_id / f).read_bytes()
