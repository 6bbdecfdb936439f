"""Discovery trusts a record's `rs` field only until the metadata handshake: a peer whose signed record says
cluster 16 but whose node runs cluster 1 is dialled, disconnected by 66/WAKU2-METADATA, forgotten (peer store and
peer-exchange cache), and neither a re-walked tree nor peer exchange brings it back. Real nodes on 127.0.0.1, the
tree on a real local DNS server, the clock injected."""

from core.waku import dns_discovery as dd
from tests.integration.waku.discovery_support import Clock, S, zone
from tests.integration.waku.test_peer_exchange import record_of
from tests.unit.waku.test_dns_discovery import TREE_PUB, LocalDns


def test_a_peer_of_another_cluster_found_by_dns_is_disconnected_and_stays_forgotten(make_node):
    good = make_node(store=False)
    liar = make_node(store=False, cluster_id=1, shards=(0,))     # runs cluster 1 ...
    liar_rec = record_of(liar, shards=(16, [32]))                  # ... signs a record that says 16/32
    server = LocalDns(zone([record_of(good), liar_rec], seq=1))
    clock = Clock()
    try:
        ours = make_node(store=False, enrtree_url=dd.make_url(TREE_PUB, "boot.test"), clock=clock,
                         dns_resolver=dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0),
                         peer_check_interval_s=3600)
        ours._call(ours.node.peers.wait_rounds, 1)            # the first round dialled both
        ours._call(ours.node.wait_rejected, liar.peer_id, 10)
        ours._call(ours.node.wait_connections, lambda: liar.peer_id not in ours.node.connected_peers(), 10)
        stored = {p.peer_id for p in ours.stored_peers()}
        assert good.peer_id in ours.connected_peers() and stored == {good.peer_id}
        assert [r.raw for r in ours.node.px_cache.records()] == [record_of(good).raw]

        server.zone = zone([record_of(good), liar_rec, record_of(make_node(store=False))], seq=2)
        clock.ns += 1800 * S
        r = ours._call(ours.node.peers.refresh_dns)
        assert r.changed and liar.peer_id in {e.peer_id for e in r.enrs}
        assert liar.peer_id not in {p.peer_id for p in ours.stored_peers()} and len(ours.stored_peers()) == 2
        ours.maintain_peers()
        assert liar.peer_id not in ours.connected_peers()
        assert liar_rec.raw not in {x.raw for x in ours.node.px_cache.records()}

        good._sync(lambda: good.node.px_cache.add([liar_rec]))   # a peer hands the record out by peer exchange
        got = ours.exchange_peers(good.peer_id, 10)
        assert liar_rec.raw in {x.raw for x in got}
        assert liar.peer_id not in {p.peer_id for p in ours.stored_peers()}
        assert liar.peer_id not in ours.connected_peers()
        assert ours._call(ours.node.connect_discovered, [liar_rec], 10, "px") == []   # not even dialled
    finally:
        server.close()
