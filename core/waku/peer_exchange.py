"""34/WAKU2-PEER-EXCHANGE (/vac/waku/peer-exchange/2.0.0-alpha1): ask a peer for ENRs of peers it knows.

One exchange per stream: PeerExchangeRPC{query{num_peers}} -> PeerExchangeRPC{response{peer_infos{enr}}},
each varint-length-prefixed. The server answers from an `EnrCache` (bounded, newest `seq` per node wins), at most
`max_peers` records picked at random, as nwaku does. The client verifies every record (EIP-778 signature) and
drops the rest. `connect_discovered` dials what discovery (DNS or peer exchange) found, filtered by cluster/shards.

WakuNode (node.py) serves `node.px_cache`, which peer_manager.PeerManager fills from DNS discovery and from the
records of discovered peers it reached.
"""
from __future__ import annotations

import logging
import random
from collections import OrderedDict
from typing import Iterable

import trio
from libp2p.peer.id import ID

from core.pb import waku_peer_exchange_pb2 as pxpb
from core.waku import enr as enrlib
from core.waku.edge_streams import DEFAULT_READ_TIMEOUT_S, Exchange, serve_exchange
from core.waku.enr import Enr, EnrError
from core.waku.errors import WakuError, peer_error
from core.waku.libp2p_patches.framing import read_length_prefixed, write_length_prefixed
from core.waku.libp2p_patches.oneframe import answers_in_one_frame

PEER_EXCHANGE_PROTOCOL = "/vac/waku/peer-exchange/2.0.0-alpha1"
MAX_PEERS_PER_RESPONSE = 60        # nwaku's cap (MaxPeersCacheSize)
MAX_REQUEST = 1024
MAX_RESPONSE = 256 * 1024          # 60 records of <= 300 bytes, with room
SUCCESS, BAD_REQUEST, SERVICE_UNAVAILABLE = 200, 400, 503
log = logging.getLogger(__name__)


class PeerExchangeError(WakuError):
    """The peer answered with a status other than 200."""

    def __init__(self, code: int, desc: str, peer: str | None = None):
        super().__init__(f"peer exchange failed: {code} {desc}")
        self.code, self.desc, self.peer = code, desc, peer


class EnrCache:
    """Known peers' records, bounded (least recently added goes first), one per node id, newest seq kept."""

    def __init__(self, capacity: int = 200, rng: random.Random | None = None):
        self.capacity = capacity
        self._by_node: OrderedDict[bytes, Enr] = OrderedDict()
        self._rng = rng or random.Random()

    def add(self, records: Iterable[Enr]) -> int:
        """Add or refresh records; returns how many were new or newer."""
        changed = 0
        for r in records:
            nid = r.node_id
            old = self._by_node.get(nid)
            if old is not None and old.seq >= r.seq:
                continue
            self._by_node.pop(nid, None)
            self._by_node[nid] = r
            changed += 1
            while len(self._by_node) > self.capacity:
                self._by_node.popitem(last=False)
        return changed

    def remove(self, node_id: bytes) -> None:
        self._by_node.pop(node_id, None)

    def __len__(self) -> int:
        return len(self._by_node)

    def records(self) -> list[Enr]:
        return list(self._by_node.values())

    def sample(self, n: int) -> list[Enr]:
        recs = self.records()
        return self._rng.sample(recs, min(n, len(recs)))


def encode_query(num_peers: int) -> bytes:
    return pxpb.PeerExchangeRPC(query=pxpb.PeerExchangeQuery(num_peers=num_peers)).SerializeToString()


def answer(cache: EnrCache, data: bytes, max_peers: int = MAX_PEERS_PER_RESPONSE) -> bytes:
    """The response bytes for request bytes (never raises: a malformed request gets a 400)."""
    def reply(code: int, desc: str, recs=()) -> bytes:
        resp = pxpb.PeerExchangeResponse(peer_infos=[pxpb.PeerInfo(enr=r.raw) for r in recs],
                                         status_code=code, status_desc=desc)
        return pxpb.PeerExchangeRPC(response=resp).SerializeToString()
    try:
        rpc = pxpb.PeerExchangeRPC.FromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError, whatever the bytes
        return reply(BAD_REQUEST, "malformed request")
    if not rpc.HasField("query") or rpc.query.num_peers == 0:
        return reply(BAD_REQUEST, "request without num_peers")
    if len(cache) == 0:
        return reply(SERVICE_UNAVAILABLE, "no peers known")
    return reply(SUCCESS, "OK", cache.sample(min(rpc.query.num_peers, max_peers)))


def decode_response(data: bytes, num_peers: int, peer: str | None = None) -> tuple[list[Enr], int]:
    """(valid records, at most num_peers; number of invalid ones). Raises PeerExchangeError on a non-200."""
    try:
        rpc = pxpb.PeerExchangeRPC.FromString(data)
    except Exception as e:  # noqa: BLE001
        raise PeerExchangeError(0, f"malformed response: {e}", peer) from None
    resp = rpc.response
    if resp.HasField("status_code") and resp.status_code != SUCCESS:
        raise PeerExchangeError(resp.status_code, resp.status_desc or "no description", peer)
    out, bad = [], 0
    for info in resp.peer_infos[:num_peers]:
        try:
            out.append(enrlib.decode(info.enr))
        except EnrError:
            bad += 1
    return out, bad


def serve_on(host, cache: EnrCache, *, max_peers: int = MAX_PEERS_PER_RESPONSE,
             timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> None:
    """Register the peer-exchange server on a py-libp2p host."""
    async def handler(stream) -> None:
        async def respond(data: bytes) -> bytes:
            return answer(cache, data, max_peers)
        await serve_exchange(stream, Exchange("peer exchange", MAX_REQUEST, timeout_s), respond)
    host.set_stream_handler(PEER_EXCHANGE_PROTOCOL, answers_in_one_frame(handler))   # fix 30: serve_exchange


async def request(host, peer_id: ID, num_peers: int, *, timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> list[Enr]:
    """Ask `peer_id` for up to `num_peers` records. Network failures raise WakuPeerError, refusals
    PeerExchangeError."""
    if num_peers <= 0:
        raise ValueError("num_peers must be positive")
    pid = peer_id.pretty()
    try:
        with trio.fail_after(timeout_s):
            stream = await host.new_stream(peer_id, [PEER_EXCHANGE_PROTOCOL])
            try:
                await write_length_prefixed(stream, encode_query(num_peers))
                data = await read_length_prefixed(stream, MAX_RESPONSE)
            finally:
                await stream.close()
    except Exception as e:
        raise peer_error(e, pid, "peer exchange", timeout_s) from None
    recs, bad = decode_response(data, num_peers, pid)
    if bad:
        log.info("peer exchange: %d invalid records from %s dropped", bad, pid)
    return recs


async def connect_discovered(node, records: Iterable[Enr], *, cluster: int | None = None,
                             shards: Iterable[int] | None = None, max_new: int = 10, source: str = "px") -> list[str]:
    """Dial discovered peers (WakuNode.peers.dial) that match the cluster/shards, skipping ourselves, peers
    already connected and peers in back-off; one address after the other per peer. A peer reached has its record
    added to the node's peer-exchange cache. Returns the peer ids now connected."""
    sh = None if shards is None else list(shards)
    me, have = node.peer_id, set(node.connected_peers())
    done: list[str] = []
    for r in records:
        if len(done) >= max_new:
            break
        if cluster is not None and not r.matches(cluster, sh):
            continue
        try:
            pid, addrs = r.peer_id, r.dial_addrs()
        except EnrError:
            continue
        if pid == me or pid in have or not addrs or pid in node.metadata_rejected:   # another cluster, in fact
            continue
        node.peers.store.add(pid, addrs, source, r)
        if not node.peers.store.can_dial(pid):
            continue
        if await node.peers.dial(pid, addrs, enr=r):
            done.append(pid)
            have.add(pid)
    return done
