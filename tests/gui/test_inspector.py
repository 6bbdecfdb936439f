"""The Inspector opens real (and deliberately corrupted) archive folders and names the exact fault."""
from __future__ import annotations

from core.archive import codec
from core.archive.constants import PIECE_LENGTH


def entries_of(folder):
    return codec.sorted_entries(codec.decode_index((folder / "index").read_bytes()))


def open_and_wait(qtbot, view, source):
    with qtbot.waitSignal(view.opened, timeout=20_000) as blocker:
        view.open(source)
    return blocker.args[0]


def fault_codes(res):
    return {(f.code, f.archive_id) for f in res.faults}


def test_clean_folder_verifies_and_decodes_messages(qtbot, ops, community_copy):
    from gui.views.inspector import InspectorView
    view = InspectorView(ops)
    qtbot.addWidget(view)
    res = open_and_wait(qtbot, view, community_copy["folder"])
    assert res.report.ok and not res.faults
    assert view.archives.rowCount() == len(community_copy["result"].new_archive_ids)
    assert "no faults" in view.summary.text()
    assert res.torrent is not None and res.torrent.infohash == community_copy["result"].infohash
    aid, e = entries_of(community_copy["folder"])[1]
    with qtbot.waitSignal(view.messages_loaded, timeout=10_000) as b:
        assert view.select_archive(aid)
    assert b.args[0] == aid and b.args[1] > 0
    assert view.messages.rowCount() == b.args[1]
    # search narrows the decoded messages to the one whose hash we type
    first = view.messages.rows()[0][1]
    view.search.setText(first.hash.hex()[:16])
    assert view.message_proxy.rowCount() == 1


def test_nonzero_padding_is_pinned_to_its_archive(qtbot, ops, community_copy):
    from gui.views.inspector import InspectorView
    folder = community_copy["folder"]
    aid, e = entries_of(folder)[2]
    assert e.padding > 0
    with open(folder / "data", "r+b") as f:
        f.seek(e.offset + e.size - 1)   # last padding byte of archive 2
        f.write(b"\x01")
    view = InspectorView(ops)
    qtbot.addWidget(view)
    res = open_and_wait(qtbot, view, folder)
    assert ("padding-nonzero", aid) in fault_codes(res)
    piece = (e.offset + e.size - 1) // PIECE_LENGTH
    pm = [f for f in res.faults if f.code == "piece-mismatch"]
    assert len(pm) == 1 and pm[0].archive_id == aid and f"piece {piece}" in pm[0].message
    assert "padding" in pm[0].message
    assert "fault" in view.summary.text()
    shown = {(f.code, f.archive_id) for _, f in view.findings.rows()}
    assert ("padding-nonzero", aid) in shown


def test_flipped_message_byte_is_found_through_the_torrent(qtbot, ops, community_copy):
    from gui.views.inspector import InspectorView
    folder = community_copy["folder"]
    aid, e = entries_of(folder)[3]
    at = e.offset + e.raw_size // 2
    with open(folder / "data", "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0xFF]))
    view = InspectorView(ops)
    qtbot.addWidget(view)
    res = open_and_wait(qtbot, view, folder)
    pm = [f for f in res.faults if f.code == "piece-mismatch"]
    assert [f.archive_id for f in pm] == [aid]
    assert f"piece {at // PIECE_LENGTH}" in pm[0].message and "message bytes" in pm[0].message
    assert any(f.code == "torrent-piece-mismatch" for f in res.faults)


def test_changed_index_key_is_reported(qtbot, ops, community_copy):
    from core.pb import communities_archive_pb2 as pb
    from gui.views.inspector import InspectorView
    folder = community_copy["folder"]
    idx = pb.WakuMessageArchiveIndex()
    idx.ParseFromString((folder / "index").read_bytes())
    old = sorted(idx.archives)[0]
    forged = "0x" + "ab" * 32
    idx.archives[forged].CopyFrom(idx.archives[old])
    del idx.archives[old]
    (folder / "index").write_bytes(idx.SerializeToString(deterministic=True))
    view = InspectorView(ops)
    qtbot.addWidget(view)
    res = open_and_wait(qtbot, view, folder / "index")
    assert ("key-mismatch", forged) in fault_codes(res)
    km = next(f for f in res.faults if f.code == "key-mismatch")
    assert old in km.message


def test_truncated_data_and_garbage_index(qtbot, ops, community_copy, tmp_path):
    from gui.views.inspector import InspectorView
    folder = community_copy["folder"]
    size = (folder / "data").stat().st_size
    with open(folder / "data", "r+b") as f:
        f.truncate(size - PIECE_LENGTH)
    view = InspectorView(ops)
    qtbot.addWidget(view)
    res = open_and_wait(qtbot, view, folder / "data")
    assert any(f.code == "index-past-data" for f in res.faults)
    junk = tmp_path / "junk" / "index"
    junk.parent.mkdir()
    junk.write_bytes(b"\xff\xfe not protobuf")
    res = open_and_wait(qtbot, view, junk)
    assert any(f.code == "index-undecodable" for f in res.faults)
    res = open_and_wait(qtbot, view, "magnet:?xt=urn:btih:" + "0" * 39)
    assert res.kind == "error" and "40 hex" in res.error
