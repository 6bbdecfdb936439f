"""The registry of py-libp2p workarounds (core/waku/libp2p_patches/__init__.py) and the canaries of fixes 1-8.

A canary asserts that the upstream problem is still there in the pinned py-libp2p; it FAILS once an upgrade fixes
the problem, and then the patch (and its registry entry) can go. The canaries of the other fixes sit beside the
test that our fix works (test_libp2p_fixes.py, test_libp2p_fix14.py ... test_libp2p_fix22.py)."""
import ast
import hashlib
from pathlib import Path

import pytest
import trio
from libp2p import new_host
from libp2p.crypto.secp256k1 import create_new_key_pair
from libp2p.io.exceptions import IncompleteReadError
from libp2p.io.utils import read_exactly
from libp2p.network.swarm import Swarm
from libp2p.peer.id import ID
from libp2p.pubsub import pubsub as pubsub_module
from libp2p.pubsub import rpc_queue
from libp2p.pubsub.gossipsub import GossipSub
from libp2p.pubsub.mcache import MessageCache
from libp2p.pubsub.pb import rpc_pb2

from core.waku import libp2p_patches
from core.waku.libp2p_patches import locks, records
from core.waku.libp2p_patches.gossipsub import WAKU_RELAY_PROTOCOL
from core.waku.libp2p_patches.host import noise_only_security
from tests.unit.waku.test_libp2p_fixes import TrickleStream

ROOT = Path(__file__).resolve().parents[3]
PEER = ID(b"\x00\x25" + bytes(37))


def _upstream_gossipsub() -> GossipSub:
    return GossipSub(protocols=[WAKU_RELAY_PROTOCOL], degree=6, degree_low=4, degree_high=8)


def _unsigned(data: bytes) -> rpc_pb2.Message:
    return rpc_pb2.Message(data=data, topicIDs=["t"])


# --- the registry ---
def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_patch_names_a_canary_that_exists_and_tests_upstream():
    seen = set()
    for p in libp2p_patches.PATCHES:
        assert p.fix not in seen, p.fix
        seen.add(p.fix)
        assert p.what and p.where and p.upstream and p.how in ("global", "host", "subclass"), p
        for module in p.module.split(", "):
            assert (ROOT / "core/waku/libp2p_patches" / f"{module}.py").is_file(), p
        path, name = p.canary.split("::")
        assert name in _test_functions(ROOT / path), f"fix {p.fix}: canary {p.canary} not found"
        assert "upstream" in name, f"fix {p.fix}: {name} does not look at upstream's behaviour"
    # every fix the docs number (1-38) has an entry
    numbers = {p.fix.rstrip("abc") for p in libp2p_patches.PATCHES}
    assert numbers == {str(n) for n in range(1, 39)}


def test_global_patches_are_applied_on_import_and_apply_all_is_idempotent():
    assert libp2p_patches.applied() == {name: True for name in libp2p_patches.GLOBAL}
    before = (rpc_queue.RpcQueue.__init__, rpc_queue.RpcQueue.__init__.__defaults__, Swarm._notify,
              pubsub_module.read_varint_prefixed_bytes_limited, pubsub_module.env_to_send_in_RPC,
              {c: c.__init__ for c in locks._LOCKS})
    libp2p_patches.apply_all()
    libp2p_patches.apply_all()
    after = (rpc_queue.RpcQueue.__init__, rpc_queue.RpcQueue.__init__.__defaults__, Swarm._notify,
             pubsub_module.read_varint_prefixed_bytes_limited, pubsub_module.env_to_send_in_RPC,
             {c: c.__init__ for c in locks._LOCKS})
    assert after == before          # no second wrapper around an __init__, nothing replaced again
    assert libp2p_patches.applied() == {name: True for name in libp2p_patches.GLOBAL}


def test_every_global_patch_is_in_the_registry():
    fixes = {name.split()[0] for name in libp2p_patches.GLOBAL}
    assert fixes == {p.fix for p in libp2p_patches.PATCHES if p.how == "global"}


# --- canaries of fixes 1-8 ---
def test_fix1_upstream_refuses_the_waku_relay_id():
    with pytest.raises(ValueError):
        _upstream_gossipsub().add_peer(PEER, WAKU_RELAY_PROTOCOL)


def test_fix3_upstream_drops_later_unsigned_messages():
    upstream = _upstream_gossipsub()
    assert upstream._check_equivocation(_unsigned(b"a"))
    assert not upstream._check_equivocation(_unsigned(b"b"))


def test_fix4_upstream_cache_collides():
    cache = MessageCache(3, 5)
    for d in (b"a", b"b", b"c"):
        cache.put(_unsigned(d))
    assert len(cache.msgs) == 1          # three messages, one key (empty from+seqno)
    assert hashlib.sha256(b"b").digest() not in cache.msgs


def test_fix5_upstream_silent_drop_limits():
    assert rpc_queue.OutBoundQueueSize == 32                               # 5b (we raise the default)
    assert pubsub_module.SUBSCRIPTION_CHANNEL_SIZE == 32                   # 5a
    assert _upstream_gossipsub().spam_protection_enabled is True           # 5c


def test_fix6_upstream_read_exactly_gives_up():
    body = bytes(512000)
    with pytest.raises(IncompleteReadError):
        trio.run(read_exactly, TrickleStream(body), len(body))           # 100 retries, then it gives up


def test_fix7_upstream_offers_plaintext():
    upstream = new_host(key_pair=create_new_key_pair())
    offered = [str(p) for p in upstream.get_network().upgrader.security_multistream.transports]
    assert "/plaintext/2.0.0" in offered


def test_fix8_upstream_auto_connector_dials():
    kp = create_new_key_pair()
    host = new_host(key_pair=kp, sec_opt=noise_only_security(kp))
    ac = host.get_network().auto_connector
    called = []

    async def spy():
        called.append(1)
        return []
    ac._get_candidate_peers = spy
    ac._started = True
    trio.run(ac.maybe_connect)
    assert called == [1]          # below min_connections it looks for peerstore peers to dial


def test_records_module_keeps_upstreams_functions():
    """The canaries of fixes 9 and 18 call the upstream functions records.py kept: they must be py-libp2p's."""
    from libp2p.peer import peerstore
    from libp2p.pubsub import utils
    assert records._upstream_env_to_send is peerstore.env_to_send_in_RPC
    assert records._upstream_consume_record is utils.maybe_consume_signed_record
