"""Encrypted (token-gated) community: archives and the index are hash-ratchet encrypted, as status-go does.
A member without the key parks the download with a visible reason, does not retry in a loop, and downloads and
imports everything as soon as the key arrives."""
import secrets

from core.archive.codec import decode_index
from core.archive.errors import DecodeError
from core.node.hydrate import reference_hydrator
from core.status.archive_encryption import GroupKey, is_encrypted, open_index_bytes
from core.status.identity import community_id_bytes

from .conftest import start_control
from .test_end_to_end import _drive_member, _expected


def test_member_parks_without_key_and_imports_when_it_arrives(pair):
    import pytest
    cid = pair.control_cfg.community_id
    key = GroupKey(community_id_bytes(cid), secrets.token_bytes(32), 1_700_000_000_000)
    pair.control.group_keys.add(key)
    pair.control_cfg.encrypted = True
    pair.member_cfg.encrypted = True
    start_control(pair)
    folder = pair.control.paths.archive_dir / cid
    raw_index = (folder / "index").read_bytes()
    assert is_encrypted(raw_index)
    with pytest.raises(DecodeError):
        decode_index(raw_index)                           # nothing readable without the key
    entries = decode_index(open_index_bytes(raw_index, pair.control.group_keys))
    data = (folder / "data").read_bytes()
    assert all(is_encrypted(data[e.offset:e.offset + e.raw_size]) for e in entries.values())

    pair.member.hydrator = reference_hydrator(pair.history, unwrap=pair.member.unwrap)
    pair.member.add_community(pair.member_cfg).result(30)
    node = _drive_member(pair)
    assert node.link_parked and "decryption key missing" in node.waiting_reason
    assert pair.history.count(cid) == 0
    for _ in range(3):                                   # no retry loop
        pair.member.tick_all()[0].result(10)
        assert node.job is None
    pair.clock.advance(3600)
    pair.member.tick_all()[0].result(10)
    assert node.job is None

    pair.member.add_group_key(cid, key).result(60)       # the key arrives: the download resumes at once
    pair.member.tick_all()[0].result(10)
    assert node.job is not None and node.job.done.wait(60), node.job.snapshot()
    pair.member.tick_all()[0].result(60)
    got = {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)}
    assert got == _expected(pair)
    assert pair.member.state.archive_ids(cid, imported=True) == set(entries)
    assert node.link_parked is None and node.parked == {}


def test_parked_link_survives_a_restart_and_resumes_when_the_cli_adds_the_key(pair, tmp_path):
    """The member restarts while its download is parked for a missing key; the key then arrives through
    `archivist key group add` (another process, writing the node's data folder) and the running node resumes
    on its own and imports everything."""
    from core.cli import main
    from core.node.engine import Engine
    cid = pair.control_cfg.community_id
    key = GroupKey(community_id_bytes(cid), secrets.token_bytes(32), 1_700_000_000_000)
    pair.control.group_keys.add(key)
    pair.control_cfg.encrypted = pair.member_cfg.encrypted = True
    start_control(pair)
    pair.member.add_community(pair.member_cfg).result(30)
    assert _drive_member(pair).link_parked

    old = pair.member                                       # restart: a new engine on the same data folder
    old.stop()
    pair.member = Engine(old.paths.root, clock=pair.clock, transport=pair.hub, torrents=old.torrents,
                         peers=old.peers)
    pair.member.hydrator = reference_hydrator(pair.history, unwrap=pair.member.unwrap)
    pair.member.add_community(pair.member_cfg).result(30)
    node = pair.member.nodes[cid]
    pair.member.tick_all()[0].result(10)                    # the pending link resumes at once, and parks again
    assert node.job is not None and node.job.done.wait(60), node.job.snapshot()
    pair.member.tick_all()[0].result(10)
    assert node.link_parked and "decryption key missing" in node.waiting_reason
    assert pair.history.count(cid) == 0

    assert main(["key", "group", "add", cid, f"{key.key.hex()}@{key.timestamp}", "--data-dir",
                 str(old.paths.root)]) == 0
    assert (old.paths.group_keys.stat().st_mode & 0o777) == 0o600
    for f in pair.member.tick_all():                        # the node notices the new key on its next tick
        f.result(30)
    assert node.link_parked is None
    pair.member.tick_all()[0].result(10)
    assert node.job is not None and node.job.done.wait(60), node.job.snapshot()
    pair.member.tick_all()[0].result(60)
    assert {r["id"]: r["text"] for r in pair.history.messages(cid, limit=100_000)} == _expected(pair)
    assert node.parked == {} and "up to date" in node.waiting_reason
