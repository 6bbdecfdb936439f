"""EIP-1459 trees served by a real UDP DNS server on 127.0.0.1 (port 0), read through dnspython: never the
internet. The server is a small responder built on dnspython's message codec."""
import socket
import threading

import coincurve
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from core.waku import dns_discovery as dd
from core.waku import enr
from core.waku.dns_discovery import DnsDiscoveryError
from core.waku.errors import WakuError

TREE_KEY = bytes.fromhex("45a915e4d060149eb4365960e6a7a45f334393093061116b197e3240065ff2d8")
TREE_PUB = coincurve.PrivateKey(TREE_KEY).public_key.format(compressed=True)
DOMAIN = "nodes.example.test"
URL = dd.make_url(TREE_PUB, DOMAIN)


class LocalDns:
    """UDP DNS server answering TXT queries from a dict {fqdn: text}; counts the queries it got."""

    def __init__(self, zone: dict[str, str]):
        self.zone = {k.lower().rstrip("."): v for k, v in zone.items()}
        self.queries: list[str] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            q = dns.message.from_wire(data)
            name = q.question[0].name.to_text().lower().rstrip(".")
            self.queries.append(name)
            resp = dns.message.make_response(q)
            text = self.zone.get(name)
            if text is None:
                resp.set_rcode(dns.rcode.NXDOMAIN)
            else:
                raw = text.encode()
                chunks = " ".join('"%s"' % raw[i:i + 255].decode() for i in range(0, len(raw), 255))
                resp.answer.append(dns.rrset.from_text(q.question[0].name, 60, "IN", "TXT", chunks))
            self.sock.sendto(resp.to_wire(), addr)

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def node_records(n, cluster=16, shards=(32,)):
    return [enr.build(bytes([i + 1]) * 32, ip="127.0.0.1", tcp=60000 + i, waku2=1,
                      shards=(cluster, shards)).to_text() for i in range(n)]


def zone_for(records, *, key=TREE_KEY, domain=DOMAIN, seq=3, links=()):
    root, txt = dd.make_tree(key, records, seq=seq, links=links)
    zone = {domain: root}
    zone.update({f"{h}.{domain}": t for h, t in txt.items()})
    return zone


@pytest.fixture
def serve():
    servers = []

    def start(zone):
        s = LocalDns(zone)
        servers.append(s)
        return dd.dnspython_resolver(["127.0.0.1"], port=s.port, timeout_s=3.0), s
    yield start
    for s in servers:
        s.close()


def test_url_round_trip_and_errors():
    assert dd.parse_url(URL) == (TREE_PUB, DOMAIN)
    with pytest.raises(DnsDiscoveryError, match="not an enrtree URL"):
        dd.parse_url("https://nodes.example.test")
    with pytest.raises(DnsDiscoveryError, match="bad public key"):
        dd.parse_url("enrtree://AAAA@nodes.example.test")


def test_status_prod_url_parses():
    pub, domain = dd.parse_url("enrtree://AMOJVZX4V6EXP7NTJPMAYJYST2QP6AJXYW76IU6VGJS7UVSNDYZG4"
                               "@boot.prod.status.nodes.status.im")
    assert len(pub) == 33 and domain == "boot.prod.status.nodes.status.im"


def test_walks_a_tree_of_thirty_records_over_real_dns(serve):
    """30 leaves need branches of branches (13 children max): every record comes back, verified."""
    records = node_records(30)
    resolver, server = serve(zone_for(records))
    res = dd.DnsDiscovery(resolver).discover(URL)
    assert sorted(r.to_text() for r in res.enrs) == sorted(records)
    assert res.seq == 3 and not res.errors and not res.truncated
    assert server.queries[0] == DOMAIN and res.lookups == len(server.queries)
    assert {r.tcp for r in res.enrs} == set(range(60000, 60030))


def test_filters_by_cluster_and_shard(serve):
    records = node_records(2) + node_records(1, cluster=1, shards=(0,)) + node_records(1, shards=(64, 128))
    resolver, _ = serve(zone_for(records))
    assert len(dd.discover(URL, resolver)) == 4
    assert len(dd.discover(URL, resolver, cluster=16)) == 3
    got = dd.discover(URL, resolver, cluster=16, shards=[64])
    assert [r.relay_shards.shards for r in got] == [(64, 128)]


def test_root_signed_by_another_key_is_refused(serve):
    resolver, _ = serve(zone_for(node_records(2), key=b"\x07" * 32))
    with pytest.raises(DnsDiscoveryError, match="root signature does not match"):
        dd.DnsDiscovery(resolver).discover(URL)


def test_missing_root_is_an_error(serve):
    resolver, _ = serve({})
    with pytest.raises(DnsDiscoveryError, match="no root record at nodes.example.test") as ei:
        dd.discover(URL, resolver)
    assert isinstance(ei.value, WakuError)


def test_tampered_leaf_is_skipped_and_reported(serve):
    records = node_records(3)
    zone = zone_for(records)
    bad_name = f"{dd.subdomain(records[0])}.{DOMAIN}"
    zone[bad_name] = records[1]          # served under the wrong hash
    resolver, _ = serve(zone)
    res = dd.DnsDiscovery(resolver).discover(URL)
    assert sorted(r.to_text() for r in res.enrs) == sorted(records[1:])
    assert res.errors == [f"{bad_name}: content does not match its hash"]


def test_bounds_on_lookups_and_records(serve):
    resolver, server = serve(zone_for(node_records(30)))
    res = dd.DnsDiscovery(resolver, max_lookups=5).discover(URL)
    assert res.truncated and res.lookups == 5 and len(server.queries) == 5 and len(res.enrs) <= 3
    res = dd.DnsDiscovery(resolver, max_enrs=4).discover(URL)
    assert res.truncated and len(res.enrs) == 4


def test_deadline_uses_the_injected_clock():
    """Each lookup advances a fake clock by 1 s: a 3.5 s budget allows 4 lookups, whatever the wall time."""
    zone = zone_for(node_records(20))
    now = [0.0]

    def resolver(name):
        now[0] += 1.0
        return [zone[name]]
    res = dd.DnsDiscovery(resolver, timeout_s=3.5, clock=lambda: now[0]).discover(URL)
    assert res.truncated and res.lookups == 4


def test_links_are_followed_only_when_asked(serve):
    other_key = b"\x09" * 32
    other_pub = coincurve.PrivateKey(other_key).public_key.format(compressed=True)
    linked_url = dd.make_url(other_pub, "other.example.test")
    zone = zone_for(node_records(2), links=[linked_url])
    zone.update(zone_for(node_records(1, shards=(256,)), key=other_key, domain="other.example.test"))
    resolver, _ = serve(zone)
    assert len(dd.DnsDiscovery(resolver).discover(URL).enrs) == 2
    res = dd.DnsDiscovery(resolver, follow_links=True).discover(URL)
    assert sorted(r.relay_shards.shards for r in res.enrs) == [(32,), (32,), (256,)]


def test_a_child_listed_twice_is_fetched_once():
    leaf = node_records(1)[0]
    h = dd.subdomain(leaf)
    branch = f"enrtree-branch:{h},{h}"
    unsigned = dd.Root(dd.subdomain(branch), dd.subdomain("enrtree-branch:"), 1, b"")
    sig = coincurve.PrivateKey(TREE_KEY).sign_recoverable(enr.keccak256(unsigned.signed_text.encode()), hasher=None)
    zone = {DOMAIN: dd.Root(unsigned.enr_root, unsigned.link_root, 1, sig).text(),
            f"{dd.subdomain(branch)}.{DOMAIN}": branch, f"{h}.{DOMAIN}": leaf}
    asked = []
    res = dd.DnsDiscovery(lambda n: asked.append(n) or [zone[n]]).discover(URL)
    assert [r.to_text() for r in res.enrs] == [leaf]
    assert asked == [DOMAIN, f"{dd.subdomain(branch)}.{DOMAIN}", f"{h}.{DOMAIN}"]
