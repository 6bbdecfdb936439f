"""TTL keep-alive with an injected clock, and the REST quirks of the test node as the client sees them."""
import httpx

from core.codex.backend import CodexMember
from core.codex.manifest import manifest_cid
from core.torrent.selection import Selection
from tests.integration.codex.test_failures import published
from tests.support.codex_node import FakeClock

DAY = 86400


def test_keep_alive_refreshes_before_ttl_and_restores_after_expiry(tmp_path, codex_nodes, clients):
    clock = FakeClock()
    node = codex_nodes(clock=clock, block_ttl=30 * DAY)
    client = clients(node.url)
    owner, pub = published(tmp_path, node, clients, clock=clock, refresh_interval=7 * DAY)
    cids = owner.live_cids()
    assert len(cids) == 4

    clock.advance(3 * DAY)
    assert owner.keep_alive().refreshed == []           # nothing due yet
    clock.advance(5 * DAY)
    rep = owner.keep_alive()
    assert sorted(rep.refreshed) == sorted(cids) and not rep.restored and not rep.lost

    clock.advance(25 * DAY)                             # 33 days after upload, 25 after the refresh
    assert all(client.exists(c) for c in cids)          # refreshed blocks are still alive
    clock.advance(10 * DAY)                             # now past the TTL: the node dropped everything
    assert not any(client.exists(c) for c in cids)
    rep = owner.keep_alive()
    assert sorted(rep.restored) == sorted(cids) and not rep.errors
    res = CodexMember(client, network=False).sync(pub.index_cid, selection=Selection("all"))
    assert res.ok and len(res.messages()) == 60


def test_keep_alive_reports_lost_without_local_copy(tmp_path, codex_nodes, clients):
    node = codex_nodes()
    owner, pub = published(tmp_path, node, clients)
    for p in (owner.dir / "blobs").iterdir():
        p.unlink()
    node.forget_all()
    rep = owner.keep_alive()
    assert sorted(rep.lost) == sorted(owner.live_cids())


def test_rest_quirks(codex_nodes, clients):
    node = codex_nodes(base_path="/api/storage/v1")
    base = node.url
    assert base.endswith("/api/storage/v1")
    r = httpx.post(f"{base}/data", content=b"")
    assert r.status_code == 500
    r = httpx.post(f"{base}/data", content=b"x", headers={"Content-Type": "nonsense/zzz"})
    assert r.status_code == 422
    r = httpx.post(f"{base}/data", content=b"Hello World!", headers={
        "Content-Type": "text/plain", "Content-Disposition": 'attachment; filename="hello.txt"'})
    assert r.text == "zDvZRwzmAkhzDRPH5EW242gJBNZ2T7aoH2v1fVH66FxXL4kSbvyM"
    c = clients(base)
    cid = c.upload(b"Hello World!")
    assert cid == str(manifest_cid(b"Hello World!"))
    assert httpx.get(f"{base}/data/{cid}/exists").json() == {cid: True}
    m = c.manifest(cid)
    assert m.dataset_size == 12 and m.filename is None and m.mimetype is None
    assert c.download(cid) == b"Hello World!"
    assert httpx.delete(f"{base}/data/{cid}").status_code == 204
    assert httpx.delete(f"{base}/data/{cid}").status_code == 204   # also when absent
    assert c.exists(cid) is False
    assert c.debug_info()["id"] and c.space().quota_max_bytes == 20 * (1 << 30)
    # the 2026 layout gives the same CID for metadata-free uploads
    node26 = codex_nodes(layout="2026")
    assert clients(node26.url).upload(b"Hello World!") == cid
    # the uploaded blocks are files on disk
    assert any((node.root / "blocks").iterdir())


def test_member_node_verifies_what_peers_send(codex_nodes, clients):
    """A peer serving bytes that do not match the CID is ignored by the fetching node."""
    owner_node, member_node = codex_nodes("o"), codex_nodes("m", network_give_up=0.2)
    member_node.add_peer(owner_node)
    cid = clients(owner_node.url).upload(b"genuine bytes" * 1000)
    # corrupt the owner's stored block on disk
    for blk in (owner_node.root / "blocks").iterdir():
        blk.write_bytes(b"\x00" * blk.stat().st_size)
    import pytest
    from core.codex.errors import CodexNotFound
    with pytest.raises(CodexNotFound):
        clients(member_node.url).download(cid, network=True)


def test_network_fetch_then_local_download(codex_nodes, clients):
    owner_node, member_node = codex_nodes("o"), codex_nodes("m", network_give_up=0.2)
    member_node.add_peer(owner_node)
    data = bytes(range(256)) * 1000
    cid = clients(owner_node.url).upload(data)
    mc = clients(member_node.url)
    assert mc.exists(cid) is False
    m = mc.fetch(cid)                       # POST /data/{cid}/network
    assert m.dataset_size == len(data) and m.blocks == 4
    assert mc.exists(cid) is True and mc.download(cid) == data
    import pytest
    from core.codex.errors import CodexNotFound
    with pytest.raises(CodexNotFound):
        mc.fetch(str(manifest_cid(b"nobody has this")))
