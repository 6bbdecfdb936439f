"""Encrypted (token-gated) community: archives are hash-ratchet encrypted; a member without the key parks them
with a visible reason, does not retry in a loop, and imports them as soon as the key arrives."""
import secrets

from core.node.hydrate import reference_hydrator
from core.status.archive_encryption import GroupKey, is_encrypted
from core.status.identity import community_id_bytes

from .conftest import start_control
from .test_end_to_end import _drive_member, _expected, control_folder_ids


def test_member_parks_without_key_and_imports_when_it_arrives(pair):
    cid = pair.control_cfg.community_id
    key = GroupKey(community_id_bytes(cid), secrets.token_bytes(32), 1_700_000_000_000)
    pair.control.group_keys.add(key)
    pair.control_cfg.encrypted = True
    pair.member_cfg.encrypted = True
    start_control(pair)
    folder = pair.control.nodes[cid]
    entries = control_folder_ids(pair)
    from core.archive.folder import ArchiveFolder
    f = ArchiveFolder(pair.control.paths.archive_dir / cid)
    assert all(is_encrypted(f.read_raw(a)) for a in entries)       # nothing readable on the wire or on disk

    pair.member.hydrator = reference_hydrator(pair.history, unwrap=pair.member.unwrap)
    pair.member.add_community(pair.member_cfg).result(30)
    node = _drive_member(pair)
    assert set(node.parked) == set(entries)
    assert all("decryption key missing" in r for r in node.parked.values())
    assert "parked: decryption key missing" in node.waiting_reason
    assert pair.history.count(cid) == 0
    # no retry loop: ticking again does not try to import
    calls = []
    real = node.hydrator
    node.hydrator = lambda *a: calls.append(a) or real(*a)
    for _ in range(3):
        pair.member.tick_all()[0].result(10)
    assert calls == []
    node.hydrator = real
    assert pair.member.add_group_key(cid, key).result(60) > 0
    assert node.parked == {}
    got = {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)}
    assert got == _expected(pair)
    assert pair.member.state.archive_ids(cid, imported=True) == set(entries)
