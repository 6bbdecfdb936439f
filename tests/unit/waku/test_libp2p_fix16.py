"""Fix 16 (core/waku/libp2p_patches/pubsub.py): py-libp2p caps every pubsub RPC at 1 MiB both ways, below the Status
fleet's 1 MiB message limit plus the RPC's envelope. End to end (a 1 MiB message relayed both ways with js-waku,
a 1.2 MiB one refused by our validator with the peer kept): tests/interop/waku/test_js_waku_large.py."""
import inspect

from libp2p.pubsub import rpc_queue
from libp2p.pubsub.pubsub import Pubsub

from core.waku.libp2p_patches.pubsub import relay_rpc_limit
from core.waku.message import WakuMessage, encode_message
from core.waku.node import NodeConfig, WakuNode

MIB = 1024 * 1024


def test_fix16_upstream_still_caps_pubsub_rpcs_at_1_mib():
    assert rpc_queue.RpcQueue().max_message_size == MIB
    assert inspect.signature(Pubsub.__init__).parameters["max_inbound_rpc_size"].default == MIB
    # a message at the fleet's limit does not fit in one RPC of that size
    msg = WakuMessage(bytes(MIB - 60), "/a/1/b/proto", timestamp=1)
    assert len(encode_message(msg)) <= MIB < len(encode_message(msg)) + 60


def test_fix16_rpc_limits_follow_the_nodes_message_limit():
    assert relay_rpc_limit(MIB) == 2 * MIB
    assert relay_rpc_limit(4096) == MIB          # never below py-libp2p's: control RPCs (IHAVE lists) need room
    for size in (MIB, 3 * MIB):
        node = WakuNode(NodeConfig(ws_port=None, max_message_size=size))
        try:
            assert node.pubsub.max_inbound_rpc_size == relay_rpc_limit(size)
            node.pubsub.peer_queues["p"] = rpc_queue.RpcQueue()       # as Pubsub does for each new peer
            assert node.pubsub.peer_queues["p"].max_message_size == relay_rpc_limit(size)
        finally:
            node.peers.close()
