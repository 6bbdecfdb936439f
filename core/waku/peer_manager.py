"""Where a WakuNode's peers come from and how it keeps them: the persistent PeerStore, dialling with back-off,
DNS discovery (at start, then every `dns_refresh_s`: dns_refresh.py), and the peer-exchange record cache it serves.

- Every dial (configured, discovered, stored) goes through `dial`, which records success or failure in the store.
- `maintain()` (at start, then every `peer_check_interval_s`) remembers the connected peers (inbound ones with
  their identify listen addresses) and, below `target_peers`, dials stored peers out of back-off, best first.
- The peer-exchange cache (`node.px_cache`) is filled from DNS discovery results (signed by the tree's key) and
  from the records of discovered peers once a dial to them succeeded, so the node answers peer exchange with
  records it has reason to believe; stored records refill it after a restart.
"""
from __future__ import annotations

import logging
from typing import Iterable

import multiaddr
import trio
from libp2p.peer.peerinfo import info_from_p2p_addr

from core.waku.dns_refresh import DnsRefresh, Refresh
from core.waku.enr import Enr, EnrError
from core.waku.peer_store import PeerStore, StoredPeer

log = logging.getLogger(__name__)
PROTECT_DIALLED = "waku-dialled"    # tag-store protection of every peer we dialled (see node.py)


def _dialable(addrs: Iterable[str]) -> list[str]:
    """Plain TCP addresses first (what our node dials best), then the rest."""
    return sorted(addrs, key=lambda a: ("/ws" in a or "/dns" in a, a))


class PeerManager:
    def __init__(self, node):
        self.node = node
        cfg = node.config
        self.store = PeerStore(cfg.peer_store_path, clock=lambda: cfg.clock() / 1_000_000_000)
        self.rounds = 0                 # maintain() rounds completed (tests wait on it)
        self._round_done = trio.Event()
        self.dns_error: str | None = None   # why the last walk of cfg.enrtree_url failed; None after a good one
        self.dns = None if not cfg.enrtree_url else DnsRefresh(
            cfg.enrtree_url, cfg.dns_resolver, interval_s=cfg.dns_refresh_s, clock=self.store.clock)
        self._dns_lock = trio.Lock()
        for p in self.store.peers():    # what we knew and reached (or got from a signed tree) is served again
            if p.enr and (p.last_connected is not None or p.source == "dns"):
                try:
                    node.px_cache.add([p.record()])
                except EnrError:
                    pass

    @property
    def me(self) -> str:
        return self.node.peer_id

    # --- learning ---
    def learn(self, records: Iterable[Enr], source: str) -> list[Enr]:
        """Remember discovered records of our cluster (source "dns" or "px"); returns them. DNS records (signed
        by the tree) also go into the peer-exchange cache at once; px records only once we reach them."""
        cfg = self.node.config
        kept = []
        for r in records:
            if not r.matches(cfg.cluster_id):
                continue
            try:
                pid, addrs = r.peer_id, r.dial_addrs()
            except EnrError:
                continue
            if pid == self.me or not addrs or pid in self.node.metadata_rejected:
                continue
            self.store.add(pid, addrs, source, r)
            kept.append(r)
        if source == "dns":
            self.node.px_cache.add(kept)
        return kept

    async def discover_dns(self, url: str, resolver=None, **bounds) -> list[Enr]:
        """Walk an enrtree (in a worker thread: DNS lookups block) and learn its records; dials nothing."""
        from core.waku import dns_discovery as dd
        resolver = resolver or self.node.config.dns_resolver or dd.dnspython_resolver()
        res = await trio.to_thread.run_sync(lambda: dd.DnsDiscovery(resolver, **bounds).discover(url))
        for e in res.errors:
            log.debug("dns discovery %s: %s", url, e)
        return self.learn(res.enrs, "dns")

    async def refresh_dns(self, force: bool = False) -> Refresh | None:
        """Walk cfg.enrtree_url again when due (or `force`): only what changed is read, and the records of a
        changed tree go to the store (and the peer-exchange cache). None when not due or no tree is configured.
        Never raises: a failure is in the result and `dns_error`, and brings the next walk closer."""
        if self.dns is None:
            return None
        async with self._dns_lock:
            if not (force or self.dns.due()):
                return None
            r = await trio.to_thread.run_sync(self.dns.refresh)
        self.dns_error = r.error
        for e in r.errors:
            log.debug("dns discovery %s: %s", self.dns.url, e)
        if r.enrs:
            self.learn(r.enrs, "dns")
        return r

    def remember_connected(self) -> int:
        """Store connected peers we did not dial (inbound) with the listen addresses identify gave; mark every
        connected stored peer as good. Returns how many peers were added."""
        host, added = self.node.host, 0
        for pid in host.get_connected_peers():
            p = pid.pretty()
            if p in self.node.metadata_rejected:
                continue
            if self.store.get(p) is None:
                try:
                    addrs = [str(a) for a in host.get_peerstore().addrs(pid) if "p2p-circuit" not in str(a)]
                except Exception:  # noqa: BLE001 - py-libp2p's PeerStoreError: identify not done yet
                    addrs = []
                if not addrs:
                    continue
                self.store.add(p, addrs, "inbound")
                added += 1
            self.store.record_success(p)
        return added

    # --- dialling ---
    async def connect(self, addr: str, *, source: str = "static", enr: Enr | None = None) -> str:
        """Dial one multiaddr (with /p2p/); raises what py-libp2p raises. Recorded in the store either way."""
        info = info_from_p2p_addr(multiaddr.Multiaddr(addr))
        pid = info.peer_id.pretty()
        self.store.add(pid, [addr], source, enr)
        network = self.node.host.get_network()
        network.protect(info.peer_id, PROTECT_DIALLED)
        network.unblock_peer(info.peer_id)   # asked for by name (a configured peer, a retry's back-off): try now,
        try:                                 # not after libp2p's 60 s negative cache of a peer that was down
            with trio.fail_after(self.node.config.dial_timeout_s):
                await self.node.host.connect(info)
        except Exception:
            self.store.record_failure(pid)
            raise
        self._reached(pid, enr)
        return pid

    async def dial(self, peer_id: str, addrs: Iterable[str], *, enr: Enr | None = None) -> bool:
        """Try the addresses one after the other; one success or one failure is recorded for the peer."""
        host = self.node.host
        for a in _dialable(addrs):
            full = a if "/p2p/" in a else f"{a}/p2p/{peer_id}"
            try:
                info = info_from_p2p_addr(multiaddr.Multiaddr(full))
                host.get_network().protect(info.peer_id, PROTECT_DIALLED)
                with trio.fail_after(self.node.config.dial_timeout_s):
                    await host.connect(info)
            except Exception as e:  # noqa: BLE001 - next address; py-libp2p's dial errors have many types
                log.debug("dial %s failed: %s", full, e)
                continue
            self._reached(peer_id, enr)
            return True
        self.store.record_failure(peer_id)
        return False

    def forget(self, peer_id: str) -> None:
        """A peer the metadata check disconnected (another cluster, whatever its record said): out of the store
        and the peer-exchange cache; `learn` skips it from now on (node.metadata_rejected), so a re-walked tree
        or a peer exchange does not bring it back."""
        self.store.remove(peer_id)
        for r in self.node.px_cache.records():
            try:
                if r.peer_id == peer_id:
                    self.node.px_cache.remove(r.node_id)
            except EnrError:
                pass

    def _reached(self, peer_id: str, enr: Enr | None) -> None:
        if peer_id in self.node.metadata_rejected:      # rejected while the dial returned
            return
        self.store.record_success(peer_id)
        if enr is None:
            p = self.store.get(peer_id)
            enr = p.record() if p is not None and p.enr else None
        if enr is not None:
            self.node.px_cache.add([enr])

    async def maintain(self) -> list[str]:
        """One round: remember connected peers, then dial stored peers (out of back-off, best first) in parallel
        until `target_peers` are connected. Returns the peer ids reached."""
        self.remember_connected()
        connected = set(self.node.connected_peers())
        want = self.node.config.target_peers - len(connected)
        reached: list[str] = []
        if want > 0:
            cands = self.store.candidates(want, exclude=connected | {self.me})

            async def one(p: StoredPeer) -> None:
                if await self.dial(p.peer_id, p.addrs):
                    reached.append(p.peer_id)
            async with trio.open_nursery() as n:
                for p in cands:
                    n.start_soon(one, p)
        self.rounds += 1
        self._round_done.set()
        self._round_done = trio.Event()
        return reached

    async def wait_rounds(self, n: int, timeout: float = 30.0) -> None:
        with trio.fail_after(timeout):
            while self.rounds < n:
                await self._round_done.wait()

    async def run(self) -> None:
        """Every peer_check_interval_s: DNS discovery when due (at once at start, then every dns_refresh_s;
        sooner after a failure), then a maintain() round."""
        cfg = self.node.config
        while True:
            try:
                await self.refresh_dns()
                await self.maintain()
            except Exception:  # noqa: BLE001 - a bug here must not stop the node
                log.exception("peer maintenance failed")
            await trio.sleep(cfg.peer_check_interval_s)

    def close(self) -> None:
        self.store.close()
