"""Network presets (`archivist wakunode --network status`, `[waku] network = "status"`): defaults only, every
explicit option wins.

"status" is the Status production fleet, from status-go:
- cluster 16 and the prod tree `enrtree://AMOJVZX4...@boot.prod.status.nodes.status.im`: `params/cluster.go`
  (FleetStatusProd: ClusterID 16, WakuNodes = that tree);
- shards: `protocol/common/shard/shard.go` (MainStatusShardCluster 16; DefaultShardIndex 32: 1:1, group and
  non-community traffic; NonProtectedShardIndex 64: community control messages without a shard of their own;
  GlobalCommunityControlShard 128; GlobalCommunityContentShard 256). The fleet's ENRs also list shard 1, for which
  status-go defines no use: it is not relayed by default. A community on its own shard adds it with --shard.
- message size: the fleet runs nwaku with --max-msg-size 1024 KiB (shared docs WAKU.md).
"local" is the loopback behaviour used before presets: cluster 16, shard 32, no discovery.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.waku.message import DEFAULT_MAX_MESSAGE_SIZE
from core.waku.topics import static_shard_topic

STATUS_PROD_ENRTREE = "enrtree://AMOJVZX4V6EXP7NTJPMAYJYST2QP6AJXYW76IU6VGJS7UVSNDYZG4@boot.prod.status.nodes.status.im"


@dataclass(frozen=True)
class NetworkPreset:
    name: str
    cluster_id: int
    shards: tuple[int, ...]
    enrtree_url: str | None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    label: str = ""              # what Settings shows (gui/views/node_settings.py)
    about: str = ""

    @property
    def pubsub_topics(self) -> tuple[str, ...]:
        return tuple(static_shard_topic(self.cluster_id, s) for s in self.shards)


NETWORKS = {    # in the order Settings lists them
    "status": NetworkPreset("status", 16, (32, 64, 128, 256), STATUS_PROD_ENRTREE, 1024 * 1024, "Status fleet",
                            "The Status network: cluster 16, shards 32, 64, 128 and 256; peers found through the "
                            "fleet's DNS tree (boot.prod.status.nodes.status.im) and peer exchange."),
    "local": NetworkPreset("local", 16, (32,), None, label="Local",
                           about="Only the Waku peers listed here: cluster 16, shard 32, no discovery (tests, "
                                 "a private network, the demo)."),
}
DEFAULT_NETWORK = "local"


class UnknownNetwork(ValueError):
    pass


def preset(name: str | None) -> NetworkPreset:
    key = (name or DEFAULT_NETWORK).strip().lower()
    if key not in NETWORKS:
        raise UnknownNetwork(f"unknown waku network {name!r}: choose one of {', '.join(sorted(NETWORKS))}")
    return NETWORKS[key]


@dataclass(frozen=True)
class Resolved:
    cluster_id: int
    shards: tuple[int, ...]
    pubsub_topics: tuple[str, ...]
    enrtree_url: str | None
    max_message_size: int


def resolve(network: str | None = None, *, cluster_id: int | None = None, shards=None, pubsub_topics=None,
            enrtree_url: str | None = None, max_message_size: int | None = None) -> Resolved:
    """The preset's values where the caller gave none (None or empty). Explicit shards or cluster without explicit
    pubsub topics give the topics of those shards; `enrtree_url=""` turns discovery off."""
    p = preset(network)
    cluster = p.cluster_id if cluster_id is None else cluster_id
    sh = tuple(shards) if shards else p.shards
    topics = tuple(pubsub_topics) if pubsub_topics else tuple(static_shard_topic(cluster, s) for s in sh)
    tree = p.enrtree_url if enrtree_url is None else (enrtree_url or None)
    return Resolved(cluster, sh, topics, tree, max_message_size or p.max_message_size)
