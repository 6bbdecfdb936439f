"""Assemble a running Engine from NodeSettings: BitTorrent session, Waku backend, history database."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from core.node.community import NodePaths
from core.node.config import NodeSettings, listen_address
from core.node.engine import Engine
from core.node.hydrate import reference_hydrator
from core.storage.member_history import MemberHistory

log = logging.getLogger(__name__)


@dataclass
class RunningNode:
    settings: NodeSettings
    engine: Engine
    torrents: object
    waku: object | None
    history: MemberHistory
    extra: dict = field(default_factory=dict)
    _stopping: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _stopped: bool = field(default=False, repr=False, compare=False)

    def start_communities(self) -> None:
        for c in self.settings.communities:
            self.engine.add_community(c)
        self.engine.start()

    def stop(self) -> None:
        """Stop once, from any thread: Quit stops the node on a thread of its own and may stop waiting for it
        (gui.main_window.STOP_SECONDS); a later caller then waits here for that stop to end instead of racing it."""
        with self._stopping:
            if self._stopped:
                return
            self._stopped = True
            failed = None
            for step in (self.engine.stop, getattr(self.waku, "stop", None), self.torrents.close, self.history.close):
                try:
                    step() if step is not None else None
                except Exception as e:   # the next parts still stop: a failing engine must not leave sockets open
                    log.exception("stopping the node failed in %s", getattr(step, "__qualname__", step))
                    failed = failed or e
            if failed is not None:
                raise failed


def _waku_backend(s: NodeSettings):
    if s.waku_backend == "none":
        return None
    if s.waku_backend == "nwaku-rest":
        from core.waku.nwaku_rest import NwakuRestBackend  # external nwaku (see docs/WAKU-NODE.md)
        return NwakuRestBackend(s.waku_rest_url)
    from core.waku.embedded import EmbeddedWakuBackend
    from core.waku.store_db import MessageStore
    store = MessageStore(s.data_dir / "waku-store.sqlite", max_future_ns=int(s.waku_max_future_s * 10 ** 9))
    return EmbeddedWakuBackend(waku_node_config(s, store))


def waku_node_config(s: NodeSettings, store=None):
    """The embedded node's NodeConfig from the [waku] settings."""
    from core.waku.networks import resolve
    from core.waku.node import NodeConfig
    net = resolve(s.waku_network, max_message_size=s.waku_max_message_size)  # the preset; explicit keys win
    return NodeConfig(host=s.waku_host, tcp_port=s.waku_port, store=store, key_path=s.data_dir / "waku-node.key",
                      cluster_id=net.cluster_id, shards=net.shards, pubsub_topics=net.pubsub_topics,
                      enrtree_url=net.enrtree_url, peer_store_path=s.data_dir / "waku-peers.sqlite",
                      max_message_size=s.waku_max_message_size, max_future_s=s.waku_max_future_s,
                      read_timeout_s=s.waku_read_timeout_s, requests_per_s=s.waku_requests_per_s,
                      request_burst=s.waku_request_burst, requests_per_ip_s=s.waku_requests_per_ip_s,
                      request_burst_per_ip=s.waku_request_burst_per_ip,
                      rate_exempt_ips=tuple(s.waku_rate_exempt_ips))


def spark_settings(s: NodeSettings):
    """The [spark] settings as the pipeline's SparkSettings (master, driver network, secret, encryption, executor
    timeout, stage folder)."""
    from core.pipeline.session import SparkSettings
    return SparkSettings(master=s.spark_master, secret_file=s.spark_secret_file, encrypt=s.spark_encrypt,
                         driver_host=s.spark_driver_host, driver_bind=s.spark_driver_bind,
                         driver_port=s.spark_driver_port or None, block_manager_port=s.spark_block_manager_port or None,
                         executor_timeout=s.spark_executor_timeout, stage_dir=s.spark_stage_dir)


def spark_builder(settings):
    """A ControlNode builder that runs the build job on the process's SparkSession (byte-identical output)."""
    from core.pipeline.build import submit_build
    from core.pipeline.session import default_owner
    owner = default_owner(settings)
    return lambda *args, **kw: submit_build(owner, *args, **kw).result()


def start_node(s: NodeSettings, *, clock=None, communities: bool = True, offload: bool = True) -> RunningNode:
    """Start the services; with communities=False the caller subscribes to events first, then calls
    RunningNode.start_communities(). offload: the reference build and the import run in a worker process
    (core/node/offload.py), off the GIL of the window's (or the node's network) threads."""
    from core.node.transport import WakuTransport
    from core.torrent.service import TorrentService
    from core.torrent.settings import TorrentSettings
    s.data_dir.mkdir(parents=True, exist_ok=True)
    host, port = listen_address(s.torrent_listen)
    tset = (TorrentSettings.loopback(listen_host=host, listen_port=port) if s.torrent_local
            else TorrentSettings(listen_host=host, listen_port=port))
    paths = NodePaths(s.data_dir)                 # the engine's own layout of the data folder
    torrents = TorrentService(tset, paths.torrent_state).start()
    waku = _waku_backend(s)
    transport = None
    if waku is not None:
        from core.waku.errors import WakuError
        waku.start()
        for p in s.waku_peers:
            try:
                waku.add_peer(p)
            except WakuError as e:  # an unreachable peer (or a bad address) is a warning, not a reason to stop
                log.warning("waku peer %s unreachable: %s", p, e)
        transport = WakuTransport(waku, store_peers=s.waku_peers)
    history = MemberHistory(paths.history_db)
    engine = Engine(s.data_dir, clock=clock, transport=transport, torrents=torrents, settle=s.settle_seconds,
                    tick_seconds=s.tick_seconds, peers=tuple(s.torrent_peers), history=history, grace=s.grace_period,
                    retention=s.retention_period, offload=offload,
                    builder=spark_builder(spark_settings(s)) if s.spark_build else None)
    engine.hydrator = reference_hydrator(history, unwrap=engine.unwrap)
    node = RunningNode(s, engine, torrents, waku, history)
    if communities:
        node.start_communities()
    return node
