"""Encrypted communities in the member's view, with real engines: the member sees that the archives wait for the
community's key, a bad key is refused under the field (nothing stored), the right key is pasted and the archives
download and import; the key lands in the data folder's group-keys.json, where `archivist key group` keeps it."""
from __future__ import annotations

import json
import secrets

import pytest
from PySide6.QtCore import Qt

from core.node.state import Role
from gui.views import keys as K


def encrypted(nodes):
    """The demo community made token-gated (as tests/integration/node/test_encrypted_community.py does)."""
    from core.node.hydrate import reference_hydrator
    from core.status.archive_encryption import GroupKey
    from core.status.identity import community_id_bytes
    cid = nodes.control_cfg.community_id
    key = GroupKey(community_id_bytes(cid), secrets.token_bytes(32), 1_700_000_000_000)
    nodes.control.group_keys.add(key)
    nodes.control_cfg.encrypted = nodes.member_cfg.encrypted = True
    nodes.member.hydrator = reference_hydrator(nodes.history, unwrap=nodes.member.unwrap)
    return cid, key


def snapshot(window):
    window.refresh()
    return window.adapter.snapshot[0] if window.adapter and window.adapter.snapshot else None


def test_member_adds_the_key_and_the_archives_import(qtbot, nodes, window):
    cid, key = encrypted(nodes)
    nodes.add_owner()
    nodes.control.archive_now(cid).result(120)
    nodes.add_member()
    nodes.run_engines()
    window.attach_engine(nodes.member, history=nodes.history_of)
    K.wire(window)
    K.wire(window)                                     # once per window: a second call adds no second handler
    box = window.member.keys
    qtbot.waitUntil(lambda: (c := snapshot(window)) is not None and c.role == Role.MEMBER and c.key_wait,
                    timeout=60_000)
    qtbot.waitUntil(lambda: box.isVisible() and "waiting for the community's key" in box.reason.text().lower())
    assert "decryption key missing" in window.member.banner.text()
    assert nodes.history.count(cid) == 0 and not nodes.member.paths.group_keys.exists()

    # a bad key: a plain sentence under the field, nothing stored
    for bad, words in (("12ab", "has 4 hex digits"), ("zz" * 32, "not a key"),
                       (key.key.hex() + "@soon", "timestamp in milliseconds")):
        box.field.setText(bad)
        qtbot.mouseClick(box.add_btn, Qt.MouseButton.LeftButton)
        assert box.error.isVisible() and words in box.error.text(), box.error.text()
        assert box.field.text() == bad
    assert not nodes.member.paths.group_keys.exists() and len(nodes.member.group_keys) == 0

    # the right key, pasted: stored in group-keys.json, and the parked download resumes and imports
    box.field.setText(f"{key.key.hex()}@{key.timestamp}")
    qtbot.mouseClick(box.add_btn, Qt.MouseButton.LeftButton)
    assert not box.error.isVisible() and box.status.text().startswith("Key added")
    qtbot.waitUntil(lambda: (c := snapshot(window)) is not None and c.key_wait is None
                    and any(a.imported for a in c.archives), timeout=90_000)
    qtbot.waitUntil(lambda: any(a.imported for a in window.member.model.rows())
                    and "waiting for the community's key" not in box.reason.text().lower())
    assert "1 imported" in window.member.counts.text()
    assert box.reason.text() == "The community's archives are encrypted; its key is held."
    stored = json.loads(nodes.member.paths.group_keys.read_text())
    assert key.key.hex() in json.dumps(stored)
    assert nodes.history.count(cid) > 0


def test_key_file_is_read_and_a_bad_file_is_refused(tmp_path, qtbot):
    from core.node.state import CommunityState
    box = K.GroupKeyBox()
    qtbot.addWidget(box)
    cid = "0x" + "02" + "11" * 32
    box.show_state(CommunityState(cid, "c", Role.MEMBER, encrypted=True,
                                  key_wait="waiting for the community's key: the archive index cannot be opened "
                                           "without it", parked=(("ab" * 32, "decryption key missing"),)))
    assert "Waiting for the community's key" in box.reason.text()
    assert box.parked.text() == f"{('ab' * 32)[:12]}…abab: decryption key missing"
    got = []
    box.key_submitted.connect(lambda c, k: got.append((c, k)))
    hexkey = "cd" * 32
    (tmp_path / "k.txt").write_text(f"# the community's key\n{hexkey}@1700000000000\n")
    box.load_file(tmp_path / "k.txt")
    assert got == [(cid, f"{hexkey}@1700000000000")] and not box.error.isVisible()
    (tmp_path / "k.json").write_text(json.dumps({"key": hexkey, "timestamp": 42}))
    box.load_file(tmp_path / "k.json")
    assert got[-1] == (cid, f"{hexkey}@42")
    (tmp_path / "two.txt").write_text(f"{hexkey}\n{hexkey}\n")
    box.load_file(tmp_path / "two.txt")
    assert box.error.text() == "two.txt should hold one key (HEX or HEX@TIMESTAMP_MS), found 2 lines"
    assert len(got) == 2
    with pytest.raises(K.KeyTextError, match="has 62 hex digits; a community key has 64"):
        K.check_key("ab" * 31, cid)
