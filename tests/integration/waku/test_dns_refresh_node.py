"""A node keeps its enrtree current (NodeConfig.dns_refresh_s): real nodes on 127.0.0.1, the tree served by a
real UDP DNS server whose zone the test changes, the node's clock injected (no sleeps). A peer added to the tree
after the start is learnt at the next re-walk and dialled by the next maintenance round."""
import logging

from core.waku import dns_discovery as dd
from tests.integration.waku.discovery_support import Clock, S, zone
from tests.integration.waku.test_peer_exchange import record_of
from tests.unit.waku.test_dns_discovery import TREE_PUB, LocalDns


def stored(node, peer_id):
    return next((p for p in node.stored_peers() if p.peer_id == peer_id), None)


def test_a_peer_added_to_the_tree_is_found_at_the_next_rewalk(make_node, caplog):
    caplog.set_level(logging.DEBUG, logger="core.waku.dns_refresh")
    b, c = make_node(store=False), make_node(store=False)
    server = LocalDns(zone([record_of(b)], seq=1))
    clock = Clock()
    try:
        a = make_node(store=False, enrtree_url=dd.make_url(TREE_PUB, "boot.test"), clock=clock,
                      dns_resolver=dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0),
                      dns_refresh_s=1800, peer_check_interval_s=3600)
        a._call(a.node.peers.wait_rounds, 1)
        assert b.peer_id in a.connected_peers() and stored(a, c.peer_id) is None
        walks = a.node.peers.dns.refreshes
        assert walks == 1

        refresh = a.node.peers.refresh_dns
        server.queries.clear()
        clock.ns += 1799 * S
        assert a._call(refresh) is None and server.queries == []        # not due: no lookup at all
        clock.ns += 1 * S
        r = a._call(refresh)
        assert r.unchanged and server.queries == ["boot.test"]          # the root only

        server.zone = zone([record_of(b), record_of(c)], seq=2)         # C joins the fleet
        server.queries.clear()
        clock.ns += 1800 * S
        r = a._call(refresh)
        assert r.changed and r.seq == 2 and {e.peer_id for e in r.enrs} == {b.peer_id, c.peer_id}
        assert len(server.queries) == 3 and r.cached == 1               # root, new branch, C; B's leaf cached
        assert stored(a, c.peer_id).source == "dns" and stored(a, c.peer_id).last_connected is None
        assert c.peer_id in a.maintain_peers() and c.peer_id in a.connected_peers()
        assert {r.raw for r in a.node.px_cache.records()} == {record_of(b).raw, record_of(c).raw}

        server.zone = {}                                                # the DNS name goes away
        clock.ns += 1800 * S
        r = a._call(refresh)
        assert r.error.startswith("no root record at boot.test") and a.node.peers.dns_error == r.error
        assert a.node.peers.dns.next_at == clock() / S + 60             # retried sooner
        clock.ns += 60 * S
        assert a._call(refresh).error == a.node.peers.dns_error
        assert len([x for x in caplog.records if x.levelno == logging.WARNING]) == 1
        assert stored(a, c.peer_id) is not None and c.peer_id in a.connected_peers()   # nothing forgotten
    finally:
        server.close()
