"""Re-walking an enrtree (core/waku/dns_refresh.py) against a real UDP DNS server on 127.0.0.1 whose zone the test
changes between walks: an unchanged root costs one lookup, a changed tree only the records with new hashes;
failures back off and are logged once. The clock is injected: nothing sleeps."""
import logging

import pytest

from core.waku import dns_discovery as dd
from core.waku.dns_refresh import DnsRefresh
from tests.unit.waku.test_dns_discovery import DOMAIN, URL, LocalDns, node_records, zone_for


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def names_of(zone):
    """The names of the tree's ENR subtree (not the root, not the empty link subtree, never walked)."""
    return {n for n in zone if n != DOMAIN and n != f"{dd.subdomain('enrtree-branch:')}.{DOMAIN}"}


@pytest.fixture
def dns():
    server = LocalDns({})
    yield server
    server.close()


def serve(server, zone):
    server.zone = {k.lower().rstrip("."): v for k, v in zone.items()}
    server.queries.clear()


def resolver_of(server):
    return dd.dnspython_resolver(["127.0.0.1"], port=server.port, timeout_s=3.0)


def test_a_rewalk_reads_the_root_only_when_unchanged_and_only_new_records_when_changed(dns):
    records = node_records(20)                   # 20 leaves: two branches under a top branch
    zone1 = zone_for(records, seq=1)
    serve(dns, zone1)
    clock = Clock()
    r = DnsRefresh(URL, resolver_of(dns), interval_s=1800, clock=clock)
    assert r.due()
    first = r.refresh()
    assert first.ok and first.changed and first.seq == 1
    assert sorted(e.to_text() for e in first.enrs) == sorted(records)
    assert first.lookups == len(dns.queries) == 1 + 3 + 20 and first.cached == 0
    assert set(r.cache) == names_of(zone1)

    clock.now += 1799
    assert not r.due()
    clock.now += 1
    assert r.due()
    dns.queries.clear()
    same = r.refresh()
    assert same.ok and same.unchanged and not same.changed and same.enrs == []
    assert dns.queries == [DOMAIN] and same.lookups == 1

    new = node_records(21)[20]                   # one leaf replaced: its branch and the top branch change
    records2 = records[:19] + [new]
    zone2 = zone_for(records2, seq=2)
    serve(dns, zone2)
    clock.now += 1800
    changed = r.refresh()
    assert changed.ok and changed.changed and changed.seq == 2
    assert sorted(e.to_text() for e in changed.enrs) == sorted(records2)
    fresh = names_of(zone2) - names_of(zone1)
    assert len(fresh) == 3                       # the new leaf, its branch, the top branch
    assert dns.queries[0] == DOMAIN and sorted(dns.queries[1:]) == sorted(n.lower() for n in fresh)
    assert changed.cached == 1 + 19              # the untouched branch and every other leaf
    assert set(r.cache) == names_of(zone2)       # pruned to the current tree
    assert r.next_at == clock.now + 1800


def test_failures_back_off_up_to_the_interval_and_are_logged_once(dns, caplog):
    caplog.set_level(logging.DEBUG, logger="core.waku.dns_refresh")
    clock = Clock()
    r = DnsRefresh(URL, resolver_of(dns), interval_s=300, retry_s=60, clock=clock)
    delays = []
    for _ in range(5):
        assert r.due()
        out = r.refresh()
        assert out.error.startswith("no root record at nodes.example.test") and out.enrs == []
        delays.append(r.next_at - clock.now)
        clock.now = r.next_at
    assert delays == [60, 120, 240, 300, 300] and r.failures == 5
    warnings = [x for x in caplog.records if x.levelno == logging.WARNING]
    assert len(warnings) == 1 and "no root record" in warnings[0].getMessage()
    assert "retrying in 60 s" in warnings[0].getMessage()
    assert sum("failed again" in x.getMessage() for x in caplog.records if x.levelno == logging.DEBUG) == 4

    serve(dns, zone_for(node_records(2)))
    out = r.refresh()
    assert out.ok and len(out.enrs) == 2 and r.failures == 0 and r.next_at == clock.now + 300
    assert any(x.levelno == logging.INFO and "works again after 5 failed walks" in x.getMessage()
               for x in caplog.records)

    serve(dns, {DOMAIN: zone_for(node_records(2), key=b"\x07" * 32)[DOMAIN]})   # a root signed by another key
    clock.now = r.next_at
    out = r.refresh()
    assert out.error == "root signature does not match the tree's public key" and r.next_at == clock.now + 60
    assert len([x for x in caplog.records if x.levelno == logging.WARNING]) == 2   # a new run of failures


def test_an_incomplete_walk_is_retried_soon_and_reads_only_the_missing_records(dns):
    records = node_records(5)
    zone = zone_for(records)
    missing = f"{dd.subdomain(records[3])}.{DOMAIN}"
    serve(dns, {k: v for k, v in zone.items() if k != missing})
    clock = Clock()
    r = DnsRefresh(URL, resolver_of(dns), interval_s=1800, retry_s=60, clock=clock)
    part = r.refresh()
    assert not part.ok and part.error is None and len(part.enrs) == 4
    assert len(part.errors) == 1 and part.errors[0].startswith(f"{missing}: lookup failed: ")
    assert r.root is None and r.next_at == clock.now + 60

    serve(dns, zone)
    clock.now += 60
    full = r.refresh()
    assert full.ok and sorted(e.to_text() for e in full.enrs) == sorted(records)
    assert dns.queries == [DOMAIN, missing.lower()]
    assert r.root is not None and r.next_at == clock.now + 1800


def test_a_bad_interval_is_refused():
    with pytest.raises(ValueError, match="interval and retry delay must be > 0"):
        DnsRefresh(URL, interval_s=0)
