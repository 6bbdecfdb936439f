"""The Waku node key is written as every secret is (core.archive.diskio.write_private_file): mode 0600 whatever is
lying around. Its own copy reused a fixed `node.key.tmp` with O_TRUNC and no chmod: a leftover 0644 temp file left
the node's secret readable by every user."""
from __future__ import annotations

import os
import stat

from core.waku.identity import load_or_create_identity, peer_id_of


def test_a_leftover_readable_temp_file_does_not_make_the_key_readable(tmp_path):
    key = tmp_path / "node.key"
    leftover = tmp_path / "node.key.tmp"
    leftover.write_text("old\n")
    os.chmod(leftover, 0o644)
    kp = load_or_create_identity(key)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.key", "node.key.tmp"]   # ours left nothing
    assert peer_id_of(load_or_create_identity(key)) == peer_id_of(kp)
