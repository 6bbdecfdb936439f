"""Encrypted communities: archives and the index are wrapped; appending reads the wrapped index back."""
import pytest

from core.archive.build import build_archives
from core.archive.codec import decode_index
from core.archive.errors import DecodeError
from core.archive.folder import ArchiveFolder
from core.status.archive_encryption import (GroupKey, GroupKeyStore, HashRatchetEncryptor, KeyMissing,
                                            index_codec, open_index_bytes)
from core.status.identity import community_id_bytes


def test_encrypted_index_round_trip_and_append(tmp_path, community):
    s, topics = community
    gid = community_id_bytes(s.community_id)
    store = GroupKeyStore()
    store.add(GroupKey(gid, bytes(range(32)), 1_700_000_000_000))
    codec = index_codec(store, gid)
    mid = s.start + 2 * 7 * 86400 + 99
    kw = dict(transform=HashRatchetEncryptor(store, gid), index_codec=codec)
    r1 = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=mid, **kw)
    folder = tmp_path / "d" / s.community_id
    data1 = (folder / "data").read_bytes()
    with pytest.raises(DecodeError):
        decode_index((folder / "index").read_bytes())
    with pytest.raises(KeyMissing):
        open_index_bytes((folder / "index").read_bytes(), GroupKeyStore())
    r2 = build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end, **kw)
    assert (folder / "data").read_bytes()[:len(data1)] == data1
    entries = ArchiveFolder(folder, index_codec=codec).entries
    assert set(entries) == set(r1.new_archive_ids) | set(r2.new_archive_ids)
