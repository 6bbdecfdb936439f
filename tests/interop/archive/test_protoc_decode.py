"""Archive and index bytes decode with an independent protobuf implementation: protoc's C++ decoder."""
import re
import subprocess
import sys
from pathlib import Path

from core.archive.folder import ArchiveFolder

ROOT = Path(__file__).resolve().parents[3]


def protoc_decode(message: str, raw: bytes) -> str:
    out = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--decode=protobuf.{message}",
                          f"-I{ROOT / 'proto'}", "communities_archive.proto"],
                         input=raw, capture_output=True, check=True, cwd=ROOT)
    return out.stdout.decode()


def test_index_and_archive_decode_with_protoc(tmp_path):
    from core.archive.build import build_archives
    from core.synth import synthesize
    s = synthesize(tmp_path / "m.sqlite", messages=300, weeks=3, channels=2, seed=9)
    topics = [bytes.fromhex(t[2:]) for t in s.topics]
    res = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end)
    folder = ArchiveFolder(tmp_path / "d" / s.community_id)

    text = protoc_decode("WakuMessageArchiveIndex", (folder.path / "index").read_bytes())
    keys = re.findall(r'key: "(0x[0-9a-f]{64})"', text)
    assert keys == sorted(folder.entries) and len(keys) == len(res.new_archive_ids)
    offsets = [int(x) for x in re.findall(r"offset: (\d+)", text)]
    assert sorted(offsets) == sorted(e.offset for e in folder.entries.values() if e.offset)  # 0 is omitted

    for aid, e in folder.ordered():
        text = protoc_decode("WakuMessageArchive", folder.read_raw(aid))
        assert text.count("messages {") == len(folder.read_archive(aid).messages)
        assert f"from: {e.start}" in text and f"to: {e.end}" in text
        stamps = [int(x) for x in re.findall(r"timestamp: (\d+)", text)]
        assert stamps == sorted(stamps) and all(e.start <= t < e.end for t in stamps)
