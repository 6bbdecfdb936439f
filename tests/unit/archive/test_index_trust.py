"""The index is checked before it is trusted: a damaged index never cuts `data` (issue 14).

Each damage is made to a real built folder; the folder is then opened directly, by `build_archives` and by
`recover_community` (the control node's start-up). Where `data` alone can rebuild the index, the rebuilt index is
byte-identical to the original; where it cannot, the error is one line naming the folder and no byte changes.
"""
import shutil

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.archive import codec, rebuild
from core.archive.build import build_archives, recover_community
from core.archive.codec import ArchiveMessage, IndexEntry
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import ArchiveError, CorruptFolder
from core.archive.folder import ArchiveFolder, IndexCodec, NewArchive
from core.archive.index_check import check_entries, check_replacement, described_length
from core.archive.verify import verify_folder
from core.cli import main
from core.status.archive_encryption import (GroupKey, GroupKeyStore, HashRatchetEncryptor, index_codec,
                                            open_archive_bytes)
from core.status.identity import community_id_bytes


def _entries(folder):
    return codec.decode_index((folder / "index").read_bytes())


def _write_index(folder, entries):
    (folder / "index").write_bytes(codec.encode_index(entries))


def _by_offset(folder):
    return sorted(_entries(folder).items(), key=lambda kv: kv[1].offset)


# -- damage that data can repair ---------------------------------------------------------------------------
def empty_index(folder):
    (folder / "index").write_bytes(b"")


def missing_index(folder):
    (folder / "index").unlink()


def truncated_index(folder):
    raw = (folder / "index").read_bytes()
    (folder / "index").write_bytes(raw[:len(raw) // 2])


def key_mismatch(folder):
    es = _entries(folder)
    es["0x" + "00" * 32] = es.pop(sorted(es)[0])
    _write_index(folder, es)


def overlap_stale_key(folder):
    """An offset changed in place (as a bit flip would): the entry no longer matches its key."""
    es = _entries(folder)
    aid, second = _by_offset(folder)[1]
    es[aid] = IndexEntry(second.start, second.end, second.topics, second.offset - PIECE_LENGTH, second.size,
                         second.padding)
    _write_index(folder, es)


def garbage_index(folder):
    (folder / "index").write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")


REPAIRABLE = [empty_index, missing_index, truncated_index, key_mismatch, overlap_stale_key, garbage_index]


# -- damage that data cannot explain -----------------------------------------------------------------------
def overlap_rekeyed(folder):
    """An overlapping entry whose key was recomputed: written on purpose, so data must hold it; it does not."""
    es = _entries(folder)
    aid, second = _by_offset(folder)[1]
    del es[aid]
    moved = IndexEntry(second.start, second.end, second.topics, second.offset - PIECE_LENGTH, second.size,
                       second.padding)
    es[moved.archive_id] = moved
    _write_index(folder, es)


def index_past_data(folder):
    es = _entries(folder)
    last = _by_offset(folder)[-1][1]
    extra = IndexEntry(last.end, last.end + 86400, last.topics, last.offset + last.size, PIECE_LENGTH, 1000)
    es[extra.archive_id] = extra
    _write_index(folder, es)


def data_cut_short(folder):
    with open(folder / "data", "r+b") as f:
        f.truncate((folder / "data").stat().st_size - PIECE_LENGTH)


def empty_index_damaged_data(folder):
    e = _by_offset(folder)[1][1]
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset + e.size - 1)
        f.write(b"\x07")
    (folder / "index").write_bytes(b"")


UNREPAIRABLE = [(overlap_rekeyed, "offset-overlap"), (index_past_data, "index-past-data"),
                (data_cut_short, "index-past-data"), (empty_index_damaged_data, "index-empty")]


def _open(s, topics, tmp_path, folder):
    return ArchiveFolder(folder).rebuilt_index


def _build(s, topics, tmp_path, folder):
    res = build_archives(s.path, s.community_id, topics, tmp_path / "archivedata", tmp_path / "torrents", end=s.end)
    assert res.new_archive_ids == []
    return res.rebuilt_index


def _recover(s, topics, tmp_path, folder):
    return recover_community(tmp_path / "archivedata", tmp_path / "torrents", s.community_id)[0].rebuilt_index


OPENERS = pytest.mark.parametrize("opener", [_open, _build, _recover], ids=["open", "build", "recover"])


@OPENERS
@pytest.mark.parametrize("damage", REPAIRABLE, ids=lambda f: f.__name__)
def test_damaged_index_is_rebuilt_from_data_never_cut(built, tmp_path, damage, opener):
    s, topics, res, folder = built
    data, index = (folder / "data").read_bytes(), (folder / "index").read_bytes()
    assert len(_entries(folder)) >= 4
    damage(folder)
    reason = opener(s, topics, tmp_path, folder)
    assert (folder / "data").read_bytes() == data
    assert (folder / "index").read_bytes() == index  # byte for byte
    assert reason and "rebuilt the index from data" in reason
    assert verify_folder(folder, res.torrent_path).ok
    if damage not in (empty_index, missing_index):
        assert (folder / "index.damaged").exists()  # the failed bytes are kept for support


def test_empty_index_regression(built):
    """The loss of issue 14: an empty index used to cut ALL of data (fails on the code before the fix)."""
    s, topics, res, folder = built
    data = (folder / "data").read_bytes()
    (folder / "index").write_bytes(b"")
    f = ArchiveFolder(folder)
    assert (folder / "data").read_bytes() == data
    assert f.recovered_bytes == 0 and len(f.entries) == len(res.new_archive_ids)


@OPENERS
@pytest.mark.parametrize("damage,code", UNREPAIRABLE, ids=lambda x: getattr(x, "__name__", x))
def test_unexplained_index_is_refused_in_one_line(built, tmp_path, damage, code, opener):
    s, topics, res, folder = built
    damage(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(CorruptFolder) as e:
        opener(s, topics, tmp_path, folder)
    msg = str(e.value)
    assert "\n" not in msg and str(folder) in msg and "archivist verify" in msg
    assert e.value.code == code and isinstance(e.value, ArchiveError)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # every byte kept


def test_cli_build_refuses_with_one_line(built, tmp_path, capsys):
    from core.status.build_cli import register  # noqa: F401  (`build` is registered there)
    s, topics, res, folder = built
    overlap_rekeyed(folder)
    data = (folder / "data").read_bytes()
    args = ["build", "--db", s.path, "--community-id", s.community_id, "--data-dir", str(tmp_path / "archivedata"),
            "--torrent-dir", str(tmp_path / "torrents"), "--end", str(s.end)]
    for t in s.topics:
        args += ["--topic", t]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(folder) in err
    assert (folder / "data").read_bytes() == data


def test_read_only_open_never_writes(built):
    s, topics, res, folder = built
    good = (folder / "index").read_bytes()
    for damage in (garbage_index, empty_index, overlap_rekeyed):
        (folder / "index").write_bytes(good)
        damage(folder)
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        with pytest.raises(CorruptFolder):
            ArchiveFolder(folder, recover=False)
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    (folder / "index").write_bytes(good)  # every refusal above left data alone
    with open(folder / "data", "ab") as f:
        f.write(b"half an archive")
    f = ArchiveFolder(folder, recover=False)  # a valid index: trailing bytes are left alone when read-only
    assert f.entries == _entries(folder) and (folder / "data").read_bytes().endswith(b"half an archive")


# -- index.prev, rolled-back indexes, interrupted appends ---------------------------------------------------
@pytest.fixture
def two_builds(tmp_path, community):
    """Build to mid-history, then to the end; returns the bytes after each step."""
    s, topics = community
    d, t = tmp_path / "d", tmp_path / "t"
    mid = s.start + 2 * 7 * 86400 + 99
    r1 = build_archives(s.path, s.community_id, topics, d, t, end=mid)
    folder = d / s.community_id
    first = {n: (folder / n).read_bytes() for n in ("data", "index")}
    r2 = build_archives(s.path, s.community_id, topics, d, t, end=s.end)
    second = {n: (folder / n).read_bytes() for n in ("data", "index")}
    assert r1.new_archive_ids and r2.new_archive_ids
    return s, topics, folder, first, second, r2


def test_index_prev_holds_the_previous_index(two_builds):
    s, topics, folder, first, second, r2 = two_builds
    assert (folder / "index.prev").read_bytes() == first["index"]
    assert not (folder / "append.pending").exists() and not list(folder.glob("*.tmp"))
    build_archives(s.path, s.community_id, topics, folder.parent, folder.parent.parent / "t", end=s.end)
    assert (folder / "index.prev").read_bytes() == first["index"]  # nothing appended: index not replaced


def test_restored_older_index_never_cuts_announced_archives(two_builds):
    """index.prev copied over index by hand: data holds complete, announced archives past it. They are kept and
    the newer index is rebuilt from them."""
    s, topics, folder, first, second, r2 = two_builds
    shutil.copy(folder / "index.prev", folder / "index")
    f = ArchiveFolder(folder)
    assert (folder / "data").read_bytes() == second["data"]
    assert (folder / "index").read_bytes() == second["index"]
    assert f.recovered_bytes == 0 and "no interrupted append explains" in f.rebuilt_index
    assert (folder / "index.prev").read_bytes() == first["index"]


def encrypted_codec(s):
    """(key store, group ID, index codec) of an encrypted community with one group key."""
    gid = community_id_bytes(s.community_id)
    store = GroupKeyStore()
    store.add(GroupKey(gid, bytes(range(32)), 1_700_000_000_000))
    return store, gid, index_codec(store, gid)


def test_restored_older_index_of_encrypted_community_is_rebuilt_only_with_its_key(tmp_path, community):
    s, topics = community
    store, gid, ic = encrypted_codec(s)
    kw = dict(transform=HashRatchetEncryptor(store, gid), index_codec=ic)
    build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.start + 15 * 86400, **kw)
    build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end, **kw)
    folder = tmp_path / "d" / s.community_id
    data = (folder / "data").read_bytes()
    newest = (folder / "index").read_bytes()
    shutil.copy(folder / "index.prev", folder / "index")
    without_key = ic._replace(open_archive=None)
    with pytest.raises(CorruptFolder) as e:          # nothing can open the archives: refuse, keep every byte
        ArchiveFolder(folder, index_codec=without_key)
    assert "encrypted" in str(e.value) and str(folder) in str(e.value)
    assert (folder / "data").read_bytes() == data
    f = ArchiveFolder(folder, index_codec=ic)        # the community's codec opens them: rebuilt, nothing cut
    assert (folder / "data").read_bytes() == data and f.rebuilt_index
    assert codec.decode_index(ic.unwrap((folder / "index").read_bytes())) == \
        codec.decode_index(ic.unwrap(newest))
    assert (folder / "data").read_bytes() == data


def _interrupt(folder, first, second, keep_tail):
    """Leave the folder as a crash in the middle of the second append would: first's index, data longer."""
    (folder / "data").write_bytes(second["data"][:len(first["data"]) + keep_tail])
    (folder / "index").write_bytes(first["index"])
    (folder / "index.prev").unlink()


@pytest.mark.parametrize("tail", ["partial", "complete"])
def test_interrupted_append_is_cut_and_rebuilds_to_the_same_bytes(two_builds, tail):
    s, topics, folder, first, second, r2 = two_builds
    extra = len(second["data"]) - len(first["data"])
    keep = extra - 5000 if tail == "partial" else extra  # complete: a crash just before the index was written
    assert keep >= PIECE_LENGTH
    _interrupt(folder, first, second, keep)
    (folder / "append.pending").write_bytes(str(len(first["data"])).encode())
    f = ArchiveFolder(folder)
    assert f.recovered_bytes == keep and f.rebuilt_index is None
    assert (folder / "data").read_bytes() == first["data"] and not (folder / "append.pending").exists()
    build_archives(s.path, s.community_id, topics, folder.parent, folder.parent.parent / "t", end=s.end)
    assert (folder / "data").read_bytes() == second["data"] and (folder / "index").read_bytes() == second["index"]


@pytest.mark.parametrize("marker,keep,cut", [(True, 3 * PIECE_LENGTH + 7, True), (False, 5000, True),
                                              (False, 3 * PIECE_LENGTH + 7, False)])
def test_interrupted_first_append(two_builds, marker, keep, cut):
    """No index yet: cut only what proof (3) covers (append.pending at 0, or less than a piece); else refuse."""
    s, topics, folder, first, second, r2 = two_builds
    for n in ("index", "index.prev"):
        (folder / n).unlink()
    (folder / "data").write_bytes(first["data"][:keep])
    if marker:
        (folder / "append.pending").write_bytes(b"0")
    if cut:
        f = ArchiveFolder(folder)
        assert f.recovered_bytes == keep and (folder / "data").read_bytes() == b"" and not f.entries
        build_archives(s.path, s.community_id, topics, folder.parent, folder.parent.parent / "t",
                       end=s.start + 2 * 7 * 86400 + 99)
        assert (folder / "data").read_bytes() == first["data"] and (folder / "index").read_bytes() == first["index"]
    else:
        with pytest.raises(CorruptFolder) as e:
            ArchiveFolder(folder)
        assert e.value.code == "index-empty" and len((folder / "data").read_bytes()) == keep


def test_unexplained_tail_of_a_piece_or_more_is_not_cut(two_builds):
    """Without append.pending, a partial tail of a piece or more could hold announced archives: refused."""
    s, topics, folder, first, second, r2 = two_builds
    _interrupt(folder, first, second, len(second["data"]) - len(first["data"]) - 5000)
    data = (folder / "data").read_bytes()
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(folder)
    assert e.value.code == "data-unindexed" and (folder / "data").read_bytes() == data


def test_crash_between_pending_removal_and_rename_keeps_the_commit(two_builds):
    """append.pending gone, index.tmp complete: the append finished but for its rename; its index is used."""
    s, topics, folder, first, second, r2 = two_builds
    _interrupt(folder, first, second, len(second["data"]) - len(first["data"]))
    (folder / "index.tmp").write_bytes(second["index"])
    f = ArchiveFolder(folder)
    assert "final rename" in f.rebuilt_index
    assert (folder / "data").read_bytes() == second["data"] and (folder / "index").read_bytes() == second["index"]
    assert not (folder / "index.tmp").exists()


def test_damaged_index_and_interrupted_append(two_builds):
    """Both at once: data up to append.pending rebuilds the index; the uncommitted bytes after it are cut."""
    s, topics, folder, first, second, r2 = two_builds
    _interrupt(folder, first, second, len(second["data"]) - len(first["data"]) - 5000)
    (folder / "append.pending").write_bytes(str(len(first["data"])).encode())
    (folder / "index").write_bytes(b"")
    f = ArchiveFolder(folder)
    assert (folder / "index").read_bytes() == first["index"] and (folder / "data").read_bytes() == first["data"]
    assert f.rebuilt_index and f.recovered_bytes > 0


def test_stale_pending_marker_never_proves_a_cut(two_builds):
    """A marker older than the index (its append committed) does not explain bytes past the index."""
    s, topics, folder, first, second, r2 = two_builds
    (folder / "append.pending").write_bytes(b"0")
    with open(folder / "data", "ab") as f:
        f.write(bytes(PIECE_LENGTH * 2))
    with pytest.raises(CorruptFolder):
        ArchiveFolder(folder)
    assert len((folder / "data").read_bytes()) == len(second["data"]) + 2 * PIECE_LENGTH


# -- encrypted communities ----------------------------------------------------------------------------------
def test_encrypted_empty_index_refused_without_key_rebuilt_with_it(tmp_path, community):
    s, topics = community
    store, gid, ic = encrypted_codec(s)
    build_archives(s.path, s.community_id, topics, tmp_path / "d", tmp_path / "t", end=s.end,
                   transform=HashRatchetEncryptor(store, gid), index_codec=ic)
    folder = tmp_path / "d" / s.community_id
    data = (folder / "data").read_bytes()
    want = ArchiveFolder(folder, index_codec=ic).entries
    (folder / "index").write_bytes(b"")
    with pytest.raises(CorruptFolder) as e:
        recover_community(tmp_path / "d", tmp_path / "t", s.community_id, index_codec=ic._replace(open_archive=None))
    assert "encrypted" in str(e.value) and "\n" not in str(e.value)
    assert (folder / "data").read_bytes() == data
    with_key = IndexCodec(ic.wrap, ic.unwrap, lambda raw: open_archive_bytes(raw, store))
    f = ArchiveFolder(folder, index_codec=with_key)
    assert f.entries == want and f.rebuilt_index and (folder / "data").read_bytes() == data
    assert ArchiveFolder(folder, index_codec=ic).entries == want  # the rebuilt index is wrapped again


# -- the rebuild itself -------------------------------------------------------------------------------------
def _archive_of_raw_size(target, start, topics, tag):
    """An encoded archive of exactly `target` bytes (one message whose payload is sized to fit)."""
    def enc(n):
        m = ArchiveMessage(b"\x04" * 65, start + 1, topics[0], bytes([tag]) * n, b"", bytes([tag]) * 32)
        return codec.encode_archive(start, start + 7 * 86400, topics, [m])
    n = target - 200
    for _ in range(5):
        n += target - len(enc(n))
    raw = enc(n)
    assert len(raw) == target
    return raw


@pytest.mark.parametrize("sizes", [[PIECE_LENGTH, 500, PIECE_LENGTH], [PIECE_LENGTH, PIECE_LENGTH],
                                   [2 * PIECE_LENGTH, PIECE_LENGTH + 1, PIECE_LENGTH - 1]])
def test_rebuild_handles_archives_without_padding(tmp_path, sizes):
    """raw exactly one piece has padding 0 (status-go's rule): the next archive starts on the boundary."""
    topics = (b"\x01\x02\x03\x04", b"\x05\x06\x07\x08")
    archives = [NewArchive(i * 7 * 86400, (i + 1) * 7 * 86400, topics, _archive_of_raw_size(n, i * 7 * 86400,
                                                                                           topics, i + 1))
                for i, n in enumerate(sizes)]
    f = ArchiveFolder(tmp_path / "c", create=True)
    f.append(archives)
    assert sorted(e.padding for e in f.entries.values())[0] == (0 if PIECE_LENGTH in sizes else 1)
    index = (tmp_path / "c" / "index").read_bytes()
    assert rebuild.rebuild_entries(tmp_path / "c" / "data") == f.entries
    (tmp_path / "c" / "index").unlink()
    assert ArchiveFolder(tmp_path / "c").entries == f.entries
    assert (tmp_path / "c" / "index").read_bytes() == index


def test_check_replacement_rules():
    e1 = IndexEntry(0, 10, (b"abcd",), 0, PIECE_LENGTH, 100)
    e2 = IndexEntry(10, 20, (b"abcd",), PIECE_LENGTH, PIECE_LENGTH, 100)
    new = {e.archive_id: e for e in (e1, e2)}
    assert check_replacement({}, new, 2 * PIECE_LENGTH) == []
    assert check_replacement({"0xjunk": e1}, new, 2 * PIECE_LENGTH) == []  # a garbled entry is not credible
    assert [f.code for f in check_replacement(new, {e1.archive_id: e1}, 2 * PIECE_LENGTH)] == \
        ["index-incomplete", "archive-not-in-data"]
    assert not [f for f in check_entries(new, 2 * PIECE_LENGTH) if f.severity == "error"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.integers(1, 2))
def test_rebuild_survives_arbitrary_bytes(blob, pieces):
    """Whatever `data` holds, the walk either names the offset it cannot explain or returns contiguous entries
    covering all of it (which check_replacement then judges like any other index)."""
    buf = blob + bytes(pieces * PIECE_LENGTH - len(blob))
    try:
        out = rebuild.walk(buf, len(buf))
    except rebuild.RebuildError as e:
        assert "\n" not in str(e)
        return
    assert described_length(out) == len(buf)
    assert all(e.offset % PIECE_LENGTH == 0 for e in out.values())


# -- check_entries finds the same layout faults whatever order the entries come in ---------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3)), min_size=1, max_size=12), st.randoms())
def test_layout_findings_do_not_depend_on_entry_order(layout, rnd):
    """check_entries checks overlaps and gaps in its first pass while entries come in data order, and sorts only
    when they do not: both paths must report the same faults (hand-computed here from the sorted offsets)."""
    entries = {}
    for i, (piece, pieces) in enumerate(layout):
        e = IndexEntry(1000 + i, 2000 + i, (b"\x00\x01\x02\x03",), piece * PIECE_LENGTH, pieces * PIECE_LENGTH,
                       PIECE_LENGTH - 10)
        entries[e.archive_id] = e
    in_order = dict(codec.sorted_entries(entries))
    shuffled = list(entries.items())
    rnd.shuffle(shuffled)
    expected_codes, end = [], 0
    for aid, e in in_order.items():
        if e.offset != end:
            expected_codes.append(("offset-overlap" if e.offset < end else "offset-gap", aid))
        end = max(end, e.offset + e.size)
    for order in (in_order, dict(shuffled)):
        got = [(f.code, f.archive_id) for f in check_entries(order, end) if f.code.startswith("offset-")]
        assert got == expected_codes
        assert not [f for f in check_entries(order, end) if f.code in ("index-past-data", "data-trailing")]
