"""The Inspector opens a Codex index CID from a local Codex test node (real HTTP, real CIDs), decodes every archive,
and pins a bad archive to its entry."""
from __future__ import annotations

import pytest

codex_node = pytest.importorskip("tests.support.codex_node")


@pytest.fixture
def node(tmp_path):
    factory = codex_node.NodeFactory(tmp_path / "nodes")
    yield factory("inspector")
    factory.close()


def published(node, built_community, tmp_path):
    from core.codex.backend import CodexOwner
    from core.codex.client import CodexClient
    s = built_community["synth"]
    with CodexClient(node.url) as c:
        res = CodexOwner(c, tmp_path / "state", s.community_id).publish(s.path, built_community["topics"], end=s.end)
    return res


def open_and_wait(qtbot, view, source):
    with qtbot.waitSignal(view.opened, timeout=30_000) as b:
        view.open(source)
    return b.args[0]


def test_codex_index_opens_and_decodes(qtbot, ops, node, built_community, tmp_path):
    from gui.views.inspector import InspectorView
    res = published(node, built_community, tmp_path)
    view = InspectorView(ops)
    qtbot.addWidget(view)
    view.codex_api = node.url
    got = open_and_wait(qtbot, view, res.index_cid)
    assert got.kind == "codex" and got.report.ok, got.report.findings
    assert view.archives.rowCount() == len(res.new_archive_ids)
    assert got.report.messages == built_community["synth"].messages
    aid = view.archives.rows()[0].archive_id
    with qtbot.waitSignal(view.messages_loaded, timeout=10_000) as b:
        view.select_archive(aid)
    assert b.args == [aid, got.rows[0].messages]


def test_codex_index_with_a_bad_archive(qtbot, ops, node, built_community, tmp_path):
    from core.codex import index as cindex
    from gui.views.inspector import InspectorView
    res = published(node, built_community, tmp_path)
    from core.codex.client import CodexClient
    from core.codex.backend import checked_download
    with CodexClient(node.url) as c:
        entries = cindex.decode_index(checked_download(c, res.index_cid))
    first = min(entries.values(), key=lambda e: e.start)
    junk_cid = node.store(b"\x07 this is not a WakuMessageArchive" * 10)
    bad = cindex.CodexIndexEntry(first.start - 7 * 86400, first.start, first.topics, junk_cid)
    entries[bad.archive_id] = bad
    forged_cid = node.store(cindex.encode_index(entries))
    view = InspectorView(ops)
    qtbot.addWidget(view)
    view.codex_api = node.url
    got = open_and_wait(qtbot, view, "codex:" + forged_cid)
    assert [f.archive_id for f in got.faults] == [bad.archive_id]
    assert junk_cid in got.faults[0].message
    assert bad.archive_id in view.faulty and "1 fault found" in view.summary.text()


def test_unreachable_codex_node_says_so(qtbot, ops, node, built_community, tmp_path):
    from gui.views.inspector import InspectorView
    res = published(node, built_community, tmp_path)
    url = node.url
    node.stop()
    view = InspectorView(ops)
    qtbot.addWidget(view)
    view.codex_api = url
    got = open_and_wait(qtbot, view, res.index_cid)
    assert got.faults and got.faults[0].code == "codex-unreachable"
