"""The crash-safe archive folder (core/archive/folder.py): the files of each append step, every refusal's sentence
and code, the cut rules (1)-(3) of the module doc with their boundaries (less than one piece, `append.pending`),
pinned against the survivors of `make mutation` (docs/QUALITY.md). Real files. A failed append and its undo:
test_folder_append_mutants.py."""
from __future__ import annotations

import errno

import pytest

from core.archive import codec, diskio, folder as fm
from core.archive.constants import PIECE_LENGTH
from core.archive.errors import ArchiveError, CorruptFolder
from core.archive.folder import ArchiveFolder, IndexCodec, NewArchive
from core.storage.archive_message import ArchiveMessage

TOPIC = bytes.fromhex("00eb85a7")
W0, WEEK = 1_700_000_000, 604800


def arch(i: int, n: int = 2) -> NewArchive:
    start = W0 + i * WEEK
    msgs = [ArchiveMessage(b"\x04" + bytes(64), start + k, TOPIC, b"m%d-%d" % (i, k), b"", bytes([i, k]) * 16)
            for k in range(n)]
    return NewArchive(start, start + WEEK, (TOPIC,), codec.encode_archive(start, start + WEEK, [TOPIC], msgs))


def made(tmp_path, n=2, **kw) -> tuple[ArchiveFolder, list[str]]:
    f = ArchiveFolder(tmp_path / "c", create=True, **kw)
    ids = f.append([arch(i) for i in range(n)]) if n else []
    return f, ids


def files(path):
    return sorted(p.name for p in path.iterdir())


def rename_lost(tmp_path, tmp=None):
    """Two archives, then a third append whose final rename a crash lost: data holds three archives, `index` is
    the old one again and `index.tmp` holds `tmp(entries_before)` (by default the new index). Returns
    (folder, ids, old index, new index)."""
    f, ids = made(tmp_path)
    old, before = f.index_path.read_bytes(), dict(f.entries)
    f.append([arch(2)])
    new = f.index_path.read_bytes()
    f.index_path.write_bytes(old)
    (f.path / "index.tmp").write_bytes(new if tmp is None else tmp(before))
    return f, ids, old, new


def test_file_names():
    assert (fm.PENDING_FILE, fm.PREV_FILE, fm.DAMAGED_FILE) == ("append.pending", "index.prev", "index.damaged")
    assert fm._one_line("a\n b\t\tc ") == "a b c"


def test_not_a_folder_and_create(tmp_path):
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(tmp_path / "nope")
    assert str(e.value) == f"{tmp_path / 'nope'} is not an archive folder" and e.value.code == "not-a-folder"
    f = ArchiveFolder(tmp_path / "a" / "b", create=True)
    assert (tmp_path / "a" / "b").is_dir() and f.entries == {} and f.described_length == 0 and f.last_end is None
    assert (f.recovered_bytes, f.rebuilt_index, f.index_codec) == (0, None, None)
    assert (f.data_path, f.index_path, f.prev_path, f.pending_path) == (
        tmp_path / "a/b/data", tmp_path / "a/b/index", tmp_path / "a/b/index.prev", tmp_path / "a/b/append.pending")
    ArchiveFolder(str(tmp_path / "a" / "b"), create=True)          # exists already: fine


def test_create_under_a_file_is_one_line(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(ArchiveError) as e:
        ArchiveFolder(tmp_path / "f" / "c", create=True)
    assert str(e.value).startswith("I/O error while creating the archive folder ")
    assert str(e.value).endswith("; nothing was written") and e.value.code == "io-error"


def test_unreadable_index_on_open_is_one_line(tmp_path):
    f, _ = made(tmp_path)
    (f.index_path).unlink()
    f.index_path.mkdir()                                     # reading `index` fails with IsADirectoryError
    with pytest.raises(ArchiveError) as e:
        ArchiveFolder(f.path)
    assert str(e.value).startswith(f"I/O error while opening the archive folder at {f.index_path} (")
    assert str(e.value).endswith("); no byte of data was cut") and e.value.code == "io-error"


def test_append_writes_data_index_and_prev(tmp_path):
    f, ids = made(tmp_path, n=0)
    assert f.append([]) == [] and files(f.path) == []
    a0, a1 = arch(0), arch(1)
    ids = f.append(iter([a0, a1]))
    e0, e1 = f.entries[ids[0]], f.entries[ids[1]]
    assert (e0.offset, e0.size, e0.padding, e1.offset) == (0, PIECE_LENGTH, PIECE_LENGTH - len(a0.raw), PIECE_LENGTH)
    assert (e0.start, e0.end, e0.topics) == (a0.start, a0.end, (TOPIC,))
    assert f.data_path.read_bytes() == a0.raw + bytes(e0.padding) + a1.raw + bytes(e1.padding)
    assert f.index_path.read_bytes() == codec.encode_index(f.entries) and ids == [e0.archive_id, e1.archive_id]
    assert files(f.path) == ["data", "index"]                # no .prev for the first index, no pending, no tmp
    first = f.index_path.read_bytes()
    ids2 = f.append([arch(2)])
    assert f.prev_path.read_bytes() == first and files(f.path) == ["data", "index", "index.prev"]
    assert f.entries[ids2[0]].offset == 2 * PIECE_LENGTH and f.described_length == 3 * PIECE_LENGTH
    assert f.last_end == W0 + 3 * WEEK and [k for k, _ in f.ordered()] == ids + ids2
    assert ArchiveFolder(f.path).entries == f.entries and ArchiveFolder(f.path).rebuilt_index is None


def test_read_raw_and_archive(tmp_path):
    f, ids = made(tmp_path)
    assert f.read_raw(ids[1]) == arch(1).raw
    assert f.read_archive(ids[1]).messages[1].payload == b"m1-1"
    with pytest.raises(KeyError) as e:
        f.read_archive("0xnone")
    assert e.value.args[0] == f"no archive 0xnone in {f.path}"


def test_append_refuses_when_data_changed_behind_its_back(tmp_path):
    f, _ = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(b"x")
    with pytest.raises(CorruptFolder) as e:
        f.append([arch(5)])
    assert str(e.value) == (f"archive folder {f.path}: data is {2 * PIECE_LENGTH + 1} bytes, the index describes "
                            f"{2 * PIECE_LENGTH}; nothing was appended") and e.value.code == "data-changed"
    assert f.data_path.stat().st_size == 2 * PIECE_LENGTH + 1 and not f.pending_path.exists()


def test_open_cuts_less_than_a_piece_after_the_index(tmp_path):
    f, ids = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * (PIECE_LENGTH - 1))
    (f.path / "index.tmp").write_bytes(b"stale")
    (f.path / "append.pending").write_bytes(b"junk")
    g = ArchiveFolder(f.path)
    assert g.recovered_bytes == PIECE_LENGTH - 1 and g.data_path.stat().st_size == 2 * PIECE_LENGTH
    assert files(g.path) == ["data", "index"] and list(g.entries) == ids and g.rebuilt_index is None


def test_a_whole_piece_past_the_index_without_pending_is_not_cut(tmp_path):
    f, _ = made(tmp_path)
    before = f.index_path.read_bytes()
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * PIECE_LENGTH)
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(f.path)
    assert e.value.code == "data-unindexed"
    assert str(e.value).startswith(f"archive folder {f.path} is not trusted: data holds {PIECE_LENGTH} bytes past "
                                   f"the last indexed archive (byte {2 * PIECE_LENGTH}) that no interrupted append "
                                   "explains; rebuilding the index from data failed: ")
    assert str(e.value).endswith(f"to recover run `archivist verify {f.path}` and put a good index back")
    assert f.data_path.stat().st_size == 3 * PIECE_LENGTH and f.index_path.read_bytes() == before


def test_bytes_past_pending_are_cut(tmp_path):
    f, ids = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(arch(7).raw + b"\x01" * 3 * PIECE_LENGTH)
    f.pending_path.write_bytes(b" %d\n" % (2 * PIECE_LENGTH))
    g = ArchiveFolder(f.path)
    assert g.recovered_bytes == 3 * PIECE_LENGTH + len(arch(7).raw) and list(g.entries) == ids
    assert files(g.path) == ["data", "index"]


@pytest.mark.parametrize("text", [b"abc", b"\xff", b"-102400", b"1000", b""])
def test_unusable_pending_is_ignored(tmp_path, text):
    f, _ = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * PIECE_LENGTH)
    f.pending_path.write_bytes(text)
    assert f._pending_offset() is None
    with pytest.raises(CorruptFolder):
        ArchiveFolder(f.path)


def test_pending_offset_values(tmp_path):
    f, _ = made(tmp_path)
    assert f._pending_offset() is None
    for value in (0, PIECE_LENGTH, 7 * PIECE_LENGTH):
        f.pending_path.write_bytes(str(value).encode())
        assert f._pending_offset() == value


def test_pending_before_the_index_end_is_not_used(tmp_path):
    f, ids = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * 10)
    f.pending_path.write_bytes(str(PIECE_LENGTH).encode())      # inside the index: ignored, the tail is < 1 piece
    g = ArchiveFolder(f.path)
    assert g.recovered_bytes == 10 and list(g.entries) == ids


def test_interrupted_first_append_is_cut_from_byte_zero(tmp_path):
    f = ArchiveFolder(tmp_path / "c", create=True)
    f.data_path.write_bytes(arch(0).raw + b"\x01" * 2 * PIECE_LENGTH)
    f.pending_path.write_bytes(b"0")
    g = ArchiveFolder(f.path)
    assert g.recovered_bytes == len(arch(0).raw) + 2 * PIECE_LENGTH and g.data_path.stat().st_size == 0
    assert g.entries == {} and files(g.path) == ["data"]


def test_missing_index_over_data_is_rebuilt(tmp_path):
    f, ids = made(tmp_path)
    f.index_path.unlink()
    g = ArchiveFolder(f.path)
    assert list(g.entries) == ids and g.index_path.read_bytes() == codec.encode_index(g.entries)
    assert g.rebuilt_index.endswith(f": rebuilt the index from data (2 archives, {2 * PIECE_LENGTH} bytes); "
                                    "nothing was cut")
    assert not (g.path / "index.damaged").exists() and not g.prev_path.exists()


def test_damaged_index_is_rebuilt_and_kept(tmp_path):
    f, ids = made(tmp_path)
    f.index_path.write_bytes(b"\xff\xfe garbage")
    g = ArchiveFolder(f.path)
    assert list(g.entries) == ids and (g.path / "index.damaged").read_bytes() == b"\xff\xfe garbage"
    assert g.rebuilt_index.startswith("the index does not decode (index does not decode as WakuMessageArchiveIndex")
    assert g.rebuilt_index.endswith(f"rebuilt the index from data (2 archives, {2 * PIECE_LENGTH} bytes); nothing "
                                    "was cut")
    assert g._index_raw == g.index_path.read_bytes()


def test_read_only_open_refuses_and_leaves_tails(tmp_path):
    f, ids = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * 5)
    g = ArchiveFolder(f.path, recover=False)
    assert g.data_path.stat().st_size == 2 * PIECE_LENGTH + 5 and list(g.entries) == ids and g.recovered_bytes == 0
    (f.path / "append.pending").write_bytes(b"0")
    ArchiveFolder(f.path, recover=False)
    assert f.pending_path.exists()                              # no clean-up when read-only
    f.index_path.write_bytes(b"\xff garbage")
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(f.path, recover=False)
    assert e.value.code == "index-undecodable"
    assert f.index_path.read_bytes() == b"\xff garbage"


def test_clean_open_removes_leftovers(tmp_path):
    f, _ = made(tmp_path)
    for name in ("append.pending", "append.pending.tmp", "index.tmp", "index.prev.tmp", "index.damaged.tmp"):
        (f.path / name).write_bytes(b"x")
    ArchiveFolder(f.path)
    assert files(f.path) == ["data", "index", "index.prev"] or files(f.path) == ["data", "index"]
    assert not any(n.endswith(".tmp") or n == "append.pending" for n in files(f.path))


def test_refusal_counts_more_faults_and_names_index_prev(tmp_path):
    f, _ = made(tmp_path, n=0)
    f.data_path.write_bytes(b"")
    err = f._refuse([fm.Finding("a-code", "first\nfault"), fm.Finding("b", "x"), fm.Finding("c", "y")], "why\nnot")
    assert str(err) == (f"archive folder {f.path} is not trusted: first fault (and 2 more faults); why not. Nothing "
                        f"was cut, changed or published; to recover run `archivist verify {f.path}` and put a good "
                        "index back") and err.code == "a-code"
    err = f._refuse([fm.Finding("a", "one"), fm.Finding("b", "two")])
    assert "one (and 1 more faults). Nothing" in str(err)
    f.prev_path.write_bytes(b"")
    err = f._refuse([fm.Finding("a", "one")])
    assert str(err).endswith("put a good index back (index.prev holds the one before the last append)")
    assert "(and" not in str(err) and "one. Nothing" in str(err)


def test_rebuild_with_empty_data_is_refused(tmp_path):
    f, _ = made(tmp_path)
    f.index_path.write_bytes(b"\xff garbage")
    f.data_path.write_bytes(b"")
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(f.path)
    assert "; data holds no archive to rebuild the index from." in str(e.value)


def test_rebuild_of_an_encrypted_folder_needs_the_opener(tmp_path):
    codec_ = IndexCodec(lambda b: b, lambda b: b)
    f, _ = made(tmp_path, index_codec=codec_)
    f.index_path.write_bytes(b"\xff garbage")
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(f.path, index_codec=codec_)
    assert ("; the archives of an encrypted community cannot be read without the community key, so the index is "
            "not rebuilt from data here.") in str(e.value)
    opened = []
    ok = IndexCodec(lambda b: b"W" + b, lambda b: b[1:], open_archive=lambda b: opened.append(b) or b)
    g = ArchiveFolder(f.path, index_codec=ok)
    assert len(opened) == 2 and g.index_path.read_bytes()[:1] == b"W" and len(g.entries) == 2


def test_index_codec_wraps_each_append(tmp_path):
    wrap = IndexCodec(lambda b: b"W" + b, lambda b: b[1:])
    f, ids = made(tmp_path, index_codec=wrap)
    assert f.index_path.read_bytes() == b"W" + codec.encode_index(f.entries)
    assert list(ArchiveFolder(f.path, index_codec=wrap).entries) == ids
    f.append([arch(3)])
    assert f.prev_path.read_bytes()[:1] == b"W"


def test_rebuilt_index_must_keep_the_indexed_archives(tmp_path):
    f, ids = made(tmp_path)
    data = bytearray(f.data_path.read_bytes())
    data[PIECE_LENGTH] = 0x0f                                  # the second archive no longer parses
    f.data_path.write_bytes(bytes(data))
    f.index_path.write_bytes(b"\xff garbage")
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(f.path)
    assert f"; rebuilding the index from data failed: byte {PIECE_LENGTH}: not protobuf" in str(e.value)


def test_rebuild_that_would_drop_an_entry_is_refused(tmp_path):
    f, ids = made(tmp_path)
    extra = codec.IndexEntry(1, 2, (TOPIC,), 2 * PIECE_LENGTH, PIECE_LENGTH, 10)
    entries = {**f.entries, extra.archive_id: extra}          # names bytes past the end of data
    f.index_path.write_bytes(codec.encode_index(entries))
    with pytest.raises(CorruptFolder) as e:
        ArchiveFolder(f.path)
    assert "; the index rebuilt from data cannot replace it: " in str(e.value)


def test_finished_append_whose_rename_was_lost_is_adopted(tmp_path):
    f, ids, old, new = rename_lost(tmp_path)
    g = ArchiveFolder(f.path)
    assert g.rebuilt_index == "found the index of a finished append that a crash kept from its final rename"
    assert g.index_path.read_bytes() == new and len(g.entries) == 3 and not (g.path / "index.tmp").exists()
    assert g._index_raw == new


def test_index_tmp_is_not_adopted_while_pending_or_when_bad(tmp_path):
    f, ids, old, new = rename_lost(tmp_path, tmp=lambda before: b"\xff garbage")
    g = ArchiveFolder(f.path)                                  # rebuilt from data instead
    assert len(g.entries) == 3 and g.rebuilt_index.startswith(f"data holds {PIECE_LENGTH} bytes past")
    assert g.prev_path.read_bytes() == old and not (g.path / "index.damaged").exists()   # a good index is .prev
    g.index_path.write_bytes(old)
    (f.path / "index.tmp").write_bytes(new)
    f.pending_path.write_bytes(str(2 * PIECE_LENGTH).encode())
    h = ArchiveFolder(f.path)                                 # the append never committed: cut
    assert h.recovered_bytes == PIECE_LENGTH and len(h.entries) == 2


def test_index_tmp_with_a_layout_that_does_not_fit_is_not_adopted(tmp_path):
    f, ids, old, new = rename_lost(tmp_path)
    data = bytearray(f.data_path.read_bytes())
    data[-1] = 1                                               # the new archive's padding is not zero
    f.data_path.write_bytes(bytes(data))
    with pytest.raises(CorruptFolder):
        ArchiveFolder(f.path)
    assert f.index_path.read_bytes() == old


def test_cut_checks(tmp_path):
    f, ids = made(tmp_path)
    n = 2 * PIECE_LENGTH
    with pytest.raises(CorruptFolder) as e:
        f._cut(PIECE_LENGTH, n + 5)
    assert e.value.code == "cut-inside-index" and f"cutting at {PIECE_LENGTH} would cut an indexed archive" in str(e.value)
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * PIECE_LENGTH)
    with pytest.raises(CorruptFolder) as e:
        f._cut(n, n + PIECE_LENGTH)
    assert e.value.code == "data-unindexed"
    assert f"{PIECE_LENGTH} bytes at {n} could hold archives and no interrupted append explains them" in str(e.value)
    with pytest.raises(CorruptFolder) as e:
        f._cut(n, n + 7)                                    # the file is not as long as the caller saw
    assert e.value.code == "data-changed" and "data changed while the folder was opened" in str(e.value)
    f.pending_path.write_bytes(str(n).encode())
    f._cut(n, n + PIECE_LENGTH)
    assert f.data_path.stat().st_size == n and f.recovered_bytes == PIECE_LENGTH and not f.pending_path.exists()


def test_cut_just_under_a_piece_and_pending_past_data(tmp_path):
    f, _ = made(tmp_path)
    n = 2 * PIECE_LENGTH
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * (PIECE_LENGTH + 3))
    f.pending_path.write_bytes(str(10 * PIECE_LENGTH).encode())     # past data: no proof
    with pytest.raises(CorruptFolder):
        f._cut(n, n + PIECE_LENGTH + 3)
    f.pending_path.write_bytes(str(3 * PIECE_LENGTH).encode())      # 3 bytes past pending, a piece before it
    with pytest.raises(CorruptFolder):
        f._cut(n, n + PIECE_LENGTH + 3)
    f._cut(3 * PIECE_LENGTH, n + PIECE_LENGTH + 3)
    assert f.recovered_bytes == 3


def test_index_tmp_that_drops_an_archive_is_not_adopted(tmp_path):
    f, ids, old, new = rename_lost(tmp_path, tmp=lambda before: codec.encode_index(dict(list(before.items())[:1])))
    g = ArchiveFolder(f.path)
    assert len(g.entries) == 3 and g.rebuilt_index.endswith("rebuilt the index from data (3 archives, "
                                                            f"{3 * PIECE_LENGTH} bytes); nothing was cut")


def test_cut_checks_the_index_against_data(tmp_path):
    f, ids = made(tmp_path)
    extra = codec.IndexEntry(1, 2, (TOPIC,), 2 * PIECE_LENGTH, PIECE_LENGTH, 10)
    f.entries = {**f.entries, extra.archive_id: extra}        # one archive past the end of data
    with pytest.raises(CorruptFolder) as e:
        f._cut(3 * PIECE_LENGTH, 2 * PIECE_LENGTH)
    assert e.value.code == "index-past-data" and f.data_path.stat().st_size == 2 * PIECE_LENGTH
    with pytest.raises(CorruptFolder) as e:
        f._cut(0, 2 * PIECE_LENGTH)                         # a cut from byte 0 forgives only a missing index
    assert e.value.code == "index-past-data"


def test_cut_without_an_index_only_from_byte_zero(tmp_path):
    f = ArchiveFolder(tmp_path / "c", create=True)
    f.data_path.write_bytes(b"\x01" * (PIECE_LENGTH + 5))
    with pytest.raises(CorruptFolder) as e:
        f._cut(10, PIECE_LENGTH + 5)
    assert e.value.code == "index-empty" and f.data_path.stat().st_size == PIECE_LENGTH + 5


def test_data_changed_sentence_and_cuts_add_up(tmp_path):
    f, _ = made(tmp_path)
    n = 2 * PIECE_LENGTH
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * 9)
    with pytest.raises(CorruptFolder) as e:
        f._cut(n, n + 7)
    assert f"is not trusted: data changed while the folder was opened. Nothing was cut" in str(e.value)
    f._cut(n, n + 9)
    with open(f.data_path, "ab") as h:
        h.write(b"\x01" * 4)
    f._cut(n, n + 4)
    assert f.recovered_bytes == 13


def test_read_archive_names_the_archive_in_its_error(tmp_path):
    from core.archive.errors import DecodeError
    f, ids = made(tmp_path)
    data = bytearray(f.data_path.read_bytes())
    data[0] = 0x08                                        # field 1 (version) where metadata was: no metadata
    f.data_path.write_bytes(bytes(data))
    with pytest.raises(DecodeError) as e:
        f.read_archive(ids[0])
    assert e.value.archive_id == ids[0]


def test_an_error_without_a_file_name_while_opening_names_the_folder(tmp_path, monkeypatch):
    f, ids = made(tmp_path)
    with open(f.data_path, "ab") as h:
        h.write(b"x" * 10)                                    # an interrupted append: opening cuts it

    class NoCut(diskio.DiskIO):
        def truncate(self, path, size):
            raise OSError(errno.EIO, "boom")                  # as some OS errors come: without a file name
    monkeypatch.setattr(diskio, "disk", NoCut())
    with pytest.raises(ArchiveError) as e:
        ArchiveFolder(f.path)
    assert str(e.value) == f"I/O error while opening the archive folder at {f.path} (boom); no byte of data was cut"
    assert f.data_path.stat().st_size == 2 * PIECE_LENGTH + 10
