"""Each failure a user can meet, against real HTTP on loopback: a clear error class, code and sentence."""
import threading

import httpx
import pytest

from core.codex.backend import CodexMember, CodexOwner
from core.codex.errors import (CodexNotFound, CodexQuotaExceeded, CodexTimeout, CodexTruncated,
                               CodexUnreachable)
from core.codex.manifest import manifest_cid
from core.torrent.selection import Selection
from tests.support.codex_node import NOT_FOUND_BODY

UNKNOWN = str(manifest_cid(b"nobody ever uploaded this"))


def published(tmp_path, node, clients, n=3, **owner_kw):
    owner = CodexOwner(clients(node.url), tmp_path / "owner", "0x02" + "ab" * 32, **owner_kw)
    archives = []
    from core.archive.codec import ArchiveMessage, encode_archive
    for i in range(n):
        lo, hi = 1_700_000_000 + i * 604800, 1_700_000_000 + (i + 1) * 604800
        msgs = [ArchiveMessage(b"\x04" * 65, lo + k, b"\x01\x02\x03\x04", bytes([k]) * (100 + k), b"",
                               bytes([i, k]) * 16) for k in range(20)]
        archives.append((lo, hi, [b"\x01\x02\x03\x04"], encode_archive(lo, hi, [b"\x01\x02\x03\x04"], msgs)))
    return owner, owner.publish_archives(archives, 20 * n)


def test_404_local_download_has_exact_body_and_clear_error(codex_nodes, clients):
    node = codex_nodes()
    r = httpx.get(f"{node.url}/data/{UNKNOWN}")
    assert r.status_code == 404 and r.content == NOT_FOUND_BODY and len(r.content) == 74
    with pytest.raises(CodexNotFound) as ei:
        clients(node.url).download(UNKNOWN)
    assert ei.value.code == "codex-not-found" and ei.value.cid == UNKNOWN
    assert "does not have this content" in str(ei.value)


def test_404_from_network_after_the_node_gives_up(codex_nodes, clients):
    node = codex_nodes(network_give_up=0.2)
    with pytest.raises(CodexNotFound):
        clients(node.url).download(UNKNOWN, network=True)


def test_network_stream_on_unknown_cid_times_out(codex_nodes, clients):
    node = codex_nodes(network_give_up=30)
    client = clients(node.url, read_timeout=0.5)
    with pytest.raises(CodexTimeout) as ei:
        client.download(UNKNOWN, network=True)
    assert ei.value.code == "codex-timeout" and "did not answer in time" in str(ei.value)


def test_stalled_stream_times_out_and_member_reports_it_per_archive(tmp_path, codex_nodes, clients):
    owner_node, member_node = codex_nodes("o"), codex_nodes("m")
    member_node.add_peer(owner_node)
    _, pub = published(tmp_path, owner_node, clients)
    entries = CodexMember(clients(member_node.url)).fetch_index(pub.index_cid)  # index now on the member's node
    member = CodexMember(clients(member_node.url, read_timeout=2))
    member_node.stall_after = 10
    member_node.fault_cids = {e.cid for e in entries.values()}
    res = member.sync(pub.index_cid, selection=Selection("latest"))
    assert not res.ok and len(entries) == 3
    (err,) = res.failed.values()
    assert isinstance(err, CodexTimeout)
    assert res.to_json()["failed"][res.chosen[0]]["code"] == "codex-timeout"
    assert res.state == "failed" and "did not answer in time" in res.summary


def test_overall_deadline_catches_a_trickling_stream(codex_nodes, clients):
    node = codex_nodes()
    cid = clients(node.url).upload(b"x" * 300_000)
    ticks = iter(range(0, 10_000, 100))  # each chunk read "takes" 100 s on this injected clock
    client = clients(node.url, download_deadline=250, monotonic=lambda: next(ticks))
    with pytest.raises(CodexTimeout) as ei:
        client.download(cid)
    assert "exceeded 250 s" in str(ei.value)


def test_truncated_stream_is_detected(codex_nodes, clients):
    node = codex_nodes()
    client = clients(node.url)
    cid = client.upload(b"y" * 200_000)
    node.truncate_after = 70_000
    with pytest.raises(CodexTruncated) as ei:
        client.download(cid)
    assert "70000 of 200000 bytes" in str(ei.value) and ei.value.code == "codex-truncated"


def test_quota_checked_before_anything_is_uploaded(tmp_path, codex_nodes, clients):
    node = codex_nodes(quota_max_bytes=3 * 65536)
    with pytest.raises(CodexQuotaExceeded) as ei:
        published(tmp_path, node, clients)
    assert "nothing was uploaded" in str(ei.value)
    assert clients(node.url).space().total_blocks == 0


def test_node_side_quota_error_maps_to_quota_exceeded(codex_nodes, clients):
    node = codex_nodes(quota_max_bytes=2 * 65536)
    client = clients(node.url)
    client.upload(b"a" * 65536)
    with pytest.raises(CodexQuotaExceeded) as ei:
        client.upload(b"b" * 65536 * 2)
    assert ei.value.status == 500 and "quota" in str(ei.value).lower()


def test_node_that_disappears(tmp_path, codex_nodes, clients):
    node = codex_nodes()
    owner, pub = published(tmp_path, node, clients)
    url = node.url
    node.stop()
    with pytest.raises(CodexUnreachable) as ei:
        owner.client.space()
    assert ei.value.code == "codex-unreachable" and "cannot be reached" in str(ei.value)
    with pytest.raises(CodexUnreachable):
        CodexMember(clients(url), network=False).fetch_index(pub.index_cid)
    rep = owner.keep_alive()
    assert rep.errors and not rep.lost and not rep.refreshed


def test_peer_disappears_member_gets_a_clear_state(tmp_path, codex_nodes, clients):
    owner_node, member_node = codex_nodes("o"), codex_nodes("m", network_give_up=0.3)
    member_node.add_peer(owner_node)
    _, pub = published(tmp_path, owner_node, clients)
    member = CodexMember(clients(member_node.url, read_timeout=5))
    member.fetch_index(pub.index_cid)  # index reached the member's node
    owner_node.stop()
    res = member.sync(pub.index_cid, selection=Selection("all"))
    assert len(res.failed) == 3 and all(isinstance(e, CodexNotFound) for e in res.failed.values())
    assert res.state == "failed" and "0 of 3 archives fetched" in res.summary and "codex-not-found" in res.summary


def test_node_stopped_during_a_hanging_download(codex_nodes, clients):
    node = codex_nodes(network_give_up=60)
    client = clients(node.url, read_timeout=30)
    errors = []
    started = threading.Event()

    def run():
        started.set()
        try:
            client.download(UNKNOWN, network=True)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    t = threading.Thread(target=run)
    t.start()
    assert started.wait(5)
    assert node.wait_for_request("/network/stream")   # the request reached the node: now it disappears
    node.stop()
    t.join(10)
    assert not t.is_alive() and errors
    assert isinstance(errors[0], (CodexUnreachable, CodexNotFound, CodexTruncated))


def test_a_node_that_closes_before_answering_is_unreachable():
    """A socket that accepts and closes without a response (a node going away between accept and answer) is
    CodexUnreachable, not httpx's RemoteProtocolError (CI saw it once, when the node stopped in that instant)."""
    import socket
    from core.codex.client import CodexClient
    from core.codex.errors import CodexUnreachable
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def close_the_connection():
        conn, _addr = srv.accept()
        conn.recv(65536)
        conn.close()
    t = threading.Thread(target=close_the_connection)
    t.start()
    try:
        with pytest.raises(CodexUnreachable) as ei:
            CodexClient(f"http://127.0.0.1:{port}/api/codex/v1").download(
                "zDvZRwzkvwapyNeL4mzB5gAsZWb2wfgS8UYTn1ssSTw4uyWyRbrv", network=True)
        assert f"127.0.0.1:{port}" in str(ei.value)
        t.join(10)
        assert not t.is_alive()
    finally:
        srv.close()
