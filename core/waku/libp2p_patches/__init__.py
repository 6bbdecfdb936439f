"""Every workaround of py-libp2p 0.8.1 (the pinned version) the Waku node needs, in one place (issue 20).

`PATCHES` is the registry: for each fix, what it fixes, where the problem lives in py-libp2p 0.8.1, the upstream
issue or pull request when one is known, the module that holds our code, how it is applied, and its *canary*:
a test that asserts the upstream problem is still there in the pinned py-libp2p, so it FAILS when an upgrade fixes
it (then remove the workaround and its entry). `tests/unit/waku/test_libp2p_patches.py` checks that every entry's
canary exists and that every global patch is applied.

How a fix is applied (`how`):
- "global": a monkeypatch of a py-libp2p module or class, for the whole process. `apply_all()` installs all of them;
  it runs when this package is first imported and is idempotent (a second call changes nothing).
- "host": installed on one host or swarm by WakuNode as it builds it (connection_config, install_connection_limits,
  install_fast_negotiation, disable_auto_connector, noise_only_security, check_listening, close_connections).
- "subclass": our subclass or our own function used instead of py-libp2p's (WakuGossipSub, WakuPubsub,
  read_length_prefixed, streams.open_stream).

No upstream issue was found in libp2p/py-libp2p for most of them (they should be filed); where one exists, or a
change upstream that may remove the need, it is named in `upstream`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from libp2p.io.trio import TrioTCPStream
from libp2p.network.swarm import Swarm
from libp2p.pubsub import gossipsub as _gossipsub_module
from libp2p.pubsub import pubsub as _pubsub_module
from libp2p.pubsub import rpc_queue as _rpc_queue
from libp2p.rcmgr.manager import ResourceManager
from libp2p.stream_muxer.yamux.yamux import Yamux, YamuxStream

from core.waku.libp2p_patches import (connections, dialing, fastpath, framing, gossipsub, host, locks, oneframe,
                                      pubsub, peerids, quietlog, readahead, records, sendq, streams, unread, yamux)

T = "tests/unit/waku/"
NO_ISSUE = "none found in libp2p/py-libp2p"


@dataclass(frozen=True)
class Patch:
    fix: str            # "1", "5b", "11": the numbers docs/WAKU-NODE.md and the tests use
    what: str           # the problem, in one line
    where: str          # where it lives in py-libp2p 0.8.1
    upstream: str       # upstream issue / pull request / version, or NO_ISSUE
    module: str         # our code, in this package
    how: str            # "global" | "host" | "subclass"
    canary: str         # pytest id of the test that fails once upstream fixes the problem


PATCHES: tuple[Patch, ...] = (
    Patch("1", "GossipSub refuses the Waku relay protocol id", "pubsub/gossipsub.py GossipSub.add_peer", NO_ISSUE,
          "gossipsub", "subclass", T + "test_libp2p_patches.py::test_fix1_upstream_refuses_the_waku_relay_id"),
    Patch("2", "publish always sets from+seqno (js-waku drops them under StrictNoSign)",
          "pubsub/pubsub.py Pubsub.publish", NO_ISSUE, "pubsub", "subclass",
          T + "test_libp2p_fixes.py::test_fix2_upstream_publish_still_sets_from_and_seqno"),
    Patch("3", "equivocation check keys on from+seqno: every later unsigned message dropped",
          "pubsub/gossipsub.py GossipSub._check_equivocation", NO_ISSUE, "gossipsub", "subclass",
          T + "test_libp2p_patches.py::test_fix3_upstream_drops_later_unsigned_messages"),
    Patch("4", "message cache keys on from+seqno: unsigned messages collide", "pubsub/mcache.py MessageCache.put",
          NO_ISSUE, "gossipsub", "subclass", T + "test_libp2p_patches.py::test_fix4_upstream_cache_collides"),
    Patch("5a", "32-slot subscription channel drops messages", "pubsub/pubsub.py SUBSCRIPTION_CHANNEL_SIZE",
          NO_ISSUE, "pubsub", "subclass", T + "test_libp2p_patches.py::test_fix5_upstream_silent_drop_limits"),
    Patch("5b", "32-RPC per-peer send queue drops RPCs", "pubsub/rpc_queue.py OutBoundQueueSize", NO_ISSUE,
          "pubsub, sendq", "global", T + "test_libp2p_patches.py::test_fix5_upstream_silent_drop_limits"),
    Patch("5c", "10 msg/s spam limit on by default", "pubsub/gossipsub.py spam_protection_enabled", NO_ISSUE,
          "gossipsub", "subclass", T + "test_libp2p_patches.py::test_fix5_upstream_silent_drop_limits"),
    Patch("6", "read_exactly gives up after 100 partial reads", "io/utils.py DEFAULT_RETRY_READ_COUNT",
          "py-libp2p PR #277 introduced the retry count (a read may return early)", "framing", "subclass",
          T + "test_libp2p_patches.py::test_fix6_upstream_read_exactly_gives_up"),
    Patch("7", "default host offers plaintext, secio and TLS", "host defaults when sec_opt is not given", NO_ISSUE,
          "host", "host", T + "test_libp2p_patches.py::test_fix7_upstream_offers_plaintext"),
    Patch("8", "auto-connector dials ~150 peerstore peers (even refused ones)",
          "network/auto_connector.py AutoConnector.maybe_connect", NO_ISSUE, "host", "host",
          T + "test_libp2p_patches.py::test_fix8_upstream_auto_connector_dials"),
    Patch("9", "signed peer record re-marshalled for every outgoing RPC", "peer/peerstore.py env_to_send_in_RPC",
          NO_ISSUE, "records", "global",
          T + "test_libp2p_fixes.py::test_fix9_upstream_still_marshals_the_record_on_every_rpc"),
    Patch("10", "a listener that cannot bind is only logged", "network/swarm.py Swarm.listen", NO_ISSUE, "host",
          "host", T + "test_libp2p_fixes.py::test_fix10_upstream_host_runs_without_an_address_it_could_not_bind"),
    Patch("11", "inbound slot held until the swarm stops; no per-IP or handshake limit; WebSocket remote IP stub",
          "network/swarm.py Swarm._handle_inbound_connection; transport/websocket/connection.py "
          "get_remote_address", NO_ISSUE, "connections", "host",
          T + "test_libp2p_fixes.py::test_fix11_upstream_keeps_the_inbound_slot_ours_releases_it"),
    Patch("12", "max_connections also blocks our own dials; the pruner trims dialled peers",
          "network/swarm.py _dial_addr_single_attempt, add_conn", NO_ISSUE, "connections", "host",
          T + "test_libp2p_fixes.py::test_fix12_upstream_max_connections_still_blocks_our_own_dials"),
    Patch("13", "no inbound stream limit per connection", "stream_muxer/yamux, stream_muxer/mplex", NO_ISSUE,
          "connections", "host",
          T + "test_libp2p_fixes.py::test_fix13_upstream_accepts_any_number_of_inbound_streams"),
    Patch("14", "messages queued (and a WARNING each) for every peer not subscribed to the topic",
          "pubsub/gossipsub.py GossipSub.publish, _prune_pending_messages", NO_ISSUE, "gossipsub", "subclass",
          T + "test_libp2p_fix14.py::test_fix14_upstream_still_queues_for_unsubscribed_peers_with_a_warning_per_message"),
    Patch("15", "a yamux WINDOW_UPDATE after nearly every read",
          "stream_muxer/yamux/yamux.py YamuxStream._auto_tune_and_send_window_update",
          "py-libp2p PR #1269 (yamux window hysteresis, merged 2026-03) may remove it: check on upgrade", "yamux",
          "global", T + "test_libp2p_fix15.py::test_fix15_upstream_still_sends_an_update_per_read"),
    Patch("16", "every pubsub RPC capped at 1 MiB both ways", "pubsub/rpc_queue.py DefaultMaxMessageSize, "
          "Pubsub(max_inbound_rpc_size)", NO_ISSUE, "pubsub", "subclass",
          T + "test_libp2p_fix16.py::test_fix16_upstream_still_caps_pubsub_rpcs_at_1_mib"),
    Patch("17", "a stopped host leaves its sockets open", "network/swarm.py Swarm.run (finally)", NO_ISSUE, "host",
          "host", T + "test_libp2p_fix17.py::test_fix17_upstream_stop_leaves_dialled_sockets_open"),
    Patch("18", "every incoming RPC's peer record verified again", "pubsub/utils.py maybe_consume_signed_record",
          NO_ISSUE, "records", "global",
          T + "test_libp2p_fix18.py::test_fix18_upstream_still_verifies_the_record_on_every_rpc"),
    Patch("19", "multistream-select client waits for the header before proposing",
          "protocol_muxer/multiselect_client.py select_one_of", NO_ISSUE, "streams", "subclass",
          T + "test_libp2p_fix19.py::test_fix19_upstream_client_waits_for_the_header_before_proposing"),
    Patch("20", "trio Lock.acquire yields even when free (~75 locks per request)",
          "yamux.py, net_stream.py, io/trio.py locks; trio.Lock by design",
          "anyio PR #761 added fast_acquire for the same cost; trio has no such option", "locks", "global",
          T + "test_libp2p_fix20.py::test_fix20_upstream_trio_lock_yields_when_free"),
    Patch("21", "a nursery and a task per notifee for every stream event", "network/swarm.py Swarm._notify",
          NO_ISSUE, "locks", "global",
          T + "test_libp2p_fix20.py::test_fix21_upstream_spawns_a_task_per_notifee_for_stream_events"),
    Patch("22", "length prefixes read one byte per call", "utils/varint.py read_varint_prefixed_bytes_limited",
          NO_ISSUE, "framing", "global",
          T + "test_libp2p_fix22.py::test_fix22_upstream_reads_a_buffered_frame_byte_by_byte"),
    Patch("23", "server side of multistream-select answers in two frames, reads byte by byte",
          "protocol_muxer/multiselect.py Multiselect.negotiate", NO_ISSUE, "fastpath", "host",
          T + "test_libp2p_fix22.py::test_fix23_upstream_answers_a_pipelined_client_in_two_writes"),
    Patch("24", "a new task per relayed message", "pubsub/pubsub.py continuously_read_stream", NO_ISSUE,
          "fastpath", "subclass", T + "test_libp2p_fix22.py::test_fix24_upstream_spawns_a_task_per_relayed_message"),
    Patch("25", "two socket receives (two scheduling points) per Noise message", "io/trio.py TrioTCPStream.read",
          NO_ISSUE, "readahead", "global",
          T + "test_libp2p_fix28.py::test_fix25_upstream_reads_the_socket_once_per_call"),
    Patch("26", "publish walks every connected peer per message", "pubsub/gossipsub.py GossipSub.publish",
          NO_ISSUE, "fastpath", "subclass",
          T + "test_libp2p_fix22.py::test_fix26_upstream_publish_walks_every_connected_peer"),
    Patch("27", "every yamux frame sent builds a debug line, debug logging on or not",
          "stream_muxer/yamux/yamux.py Yamux._write_frame", NO_ISSUE, "yamux", "global",
          T + "test_libp2p_fix27.py::test_fix27_upstream_formats_a_debug_line_per_frame_with_debug_off"),
    Patch("28", "a stream's received, unread data is dropped when its connection ends (GO_AWAY, EOF)",
          "stream_muxer/yamux/yamux.py Yamux._cleanup_on_error, read_stream, YamuxStream.read; "
          "network/stream/net_stream.py NetStream.read after SwarmConn._cleanup", NO_ISSUE, "unread", "global",
          T + "test_libp2p_fix28.py::test_fix28_upstream_drops_unread_data_when_the_connection_ends"),
    Patch("29", "every yamux frame sent is two scheduling points (the send, then an explicit checkpoint)",
          "stream_muxer/yamux/yamux.py Yamux._write_frame", NO_ISSUE, "yamux", "global",
          T + "test_libp2p_fix30.py::test_fix29_upstream_yields_again_after_the_send"),
    Patch("30", "the multistream-select echo is a frame of its own, before the handler has read the request",
          "protocol_muxer/multiselect.py Multiselect.negotiate (fix 23 kept the order)", NO_ISSUE,
          "oneframe, fastpath", "host",
          T + "test_libp2p_fix30.py::test_fix30_upstream_echoes_before_the_handler_runs"),
    Patch("31", "an answer and its FIN are two yamux frames", "stream_muxer/yamux/yamux.py YamuxStream.write, "
          "YamuxStream.close", NO_ISSUE, "oneframe", "subclass",
          T + "test_libp2p_fix30.py::test_fix31_upstream_closes_with_a_frame_of_its_own"),
    Patch("32", "the swarm's stream semaphore yields on every stream opened, even when free",
          "network/swarm.py Swarm.set_resource_manager (_stream_semaphore), SwarmConn._handle_muxed_stream, "
          "Swarm.new_stream", NO_ISSUE, "locks", "host",
          T + "test_libp2p_fix30.py::test_fix32_upstream_stream_semaphore_yields_when_free"),
    Patch("33", "a new stream's ACK is a frame written alone (a Noise message, a socket send) before its first frame "
          "(held until that frame or ACK_DEADLINE_S, 20 ms: go-yamux closes a session left 75 s without an ACK)",
          "stream_muxer/yamux/yamux.py Yamux.handle_incoming (SYN branch)", NO_ISSUE, "yamux", "global",
          T + "test_libp2p_fix33.py::test_fix33_upstream_sends_the_ack_alone"),
    Patch("34", "a new stream's SYN is a frame written alone before the opener's first write",
          "stream_muxer/yamux/yamux.py Yamux.open_stream", NO_ISSUE, "yamux, streams", "global",
          T + "test_libp2p_fix33.py::test_fix34_upstream_sends_the_syn_alone"),
    Patch("35", "the resource manager parses the peer ID string of every stream (base58, pure Python)",
          "rcmgr/manager.py ResourceManager.acquire_stream (from SwarmConn._handle_muxed_stream)", NO_ISSUE,
          "peerids", "global", T + "test_libp2p_fix33.py::test_fix35_upstream_parses_the_peer_id_per_stream"),
    Patch("36", "the receive side's debug lines (f-strings) are built whether or not debug logging is on",
          "stream_muxer/yamux/yamux.py Yamux.handle_incoming, read_stream, accept_stream, _finalize_stream_locked; "
          "security/noise/io.py BaseNoiseMsgReadWriter.read_msg; network/stream/net_stream.py NetStream.set_state",
          NO_ISSUE, "quietlog", "global",
          T + "test_libp2p_fix36.py::test_fix36_upstream_formats_the_receive_side_debug_lines_with_debug_off"),
    Patch("37", "every DATA frame's body is read inside a trio.fail_after, even when it is already decrypted in "
          "the Noise session's buffer", "stream_muxer/yamux/yamux.py Yamux._read_data_body", NO_ISSUE, "yamux",
          "global", T + "test_libp2p_fix36.py::test_fix37_upstream_enters_a_timeout_scope_for_a_buffered_body"),
    Patch("38", "a dial waits out the 250 ms happy-eyeballs head start after its address has connected, then dials "
          "the next address too", "network/swarm.py Swarm.dial_peer (move_on_after(_HAPPY_EYEBALLS_DELAY) ends only "
          "on a failure)", NO_ISSUE, "dialing", "global",
          T + "test_libp2p_fix38.py::test_fix38_upstream_returns_only_after_the_head_start"),
)


# --- the global monkeypatches: name -> (install, is applied) ---
GLOBAL: dict[str, tuple[Callable[[], None], Callable[[], bool]]] = {
    "5b send queue size": (pubsub.enlarge_send_queues,
                           lambda: _rpc_queue.RpcQueue.__init__.__defaults__[0] == pubsub.SEND_QUEUE_SIZE),
    "9 sender record cache": (records.install_sender_record_cache,
                              lambda: _pubsub_module.env_to_send_in_RPC is records.cached_env_to_send_in_RPC
                              and _gossipsub_module.env_to_send_in_RPC is records.cached_env_to_send_in_RPC),
    "15 half-window updates": (yamux.install_half_window_updates,
                               lambda: YamuxStream._auto_tune_and_send_window_update is yamux.half_window_update),
    "18 verified record cache": (records.install_verified_record_cache,
                                 lambda: _pubsub_module.maybe_consume_signed_record
                                 is records.cached_consume_signed_record
                                 and _gossipsub_module.maybe_consume_signed_record
                                 is records.cached_consume_signed_record),
    "20 uncontended locks": (locks.install_uncontended_locks,
                             lambda: all(getattr(c.__init__, "_waku_fix20", False) for c in locks._LOCKS)),
    "21 inline stream notifications": (locks.install_inline_stream_notifications,
                                       lambda: Swarm._notify is locks._notify),
    "22 one read per buffered frame": (framing.install_fast_rpc_reads,
                                       lambda: _pubsub_module.read_varint_prefixed_bytes_limited is framing.read_rpc),
    "27 lean yamux frame writes": (yamux.install_lean_write_frame,
                                   lambda: Yamux._write_frame is yamux.lean_write_frame),
    "28 unread data kept": (unread.install_unread_kept, unread.installed),
    "29 one scheduling point per frame sent": (yamux.install_lean_write_frame,   # the same function as 27
                                               lambda: Yamux._write_frame is yamux.lean_write_frame),
}
GLOBAL["35 parsed peer IDs"] = (peerids.install_parsed_peer_ids,
                               lambda: ResourceManager.acquire_stream is peerids.acquire_stream)
GLOBAL["36 receive-side debug lines built only with debug on"] = (quietlog.install_lean_debug, quietlog.installed)
GLOBAL["37 buffered DATA bodies without a timeout scope"] = (yamux.install_buffered_bodies,
                                                             lambda: Yamux._read_data_body is yamux.read_data_body)
if yamux.HOLD:                                              # benchmarks: ARCHIVIST_WAKU_SEPARATE_SYN_ACK=1 to compare
    GLOBAL["33 ACK with the first frame"] = (yamux.install_lean_write_frame,     # the same function as 27
                                             lambda: Yamux._write_frame is yamux.lean_write_frame)
    GLOBAL["34 SYN with the first write"] = (yamux.install_lean_write_frame,
                                             lambda: Yamux._write_frame is yamux.lean_write_frame)
if not os.environ.get("ARCHIVIST_WAKU_NO_QUICK_DIAL"):    # benchmarks only: fix 38 off, to compare
    GLOBAL["38 a dial returns with its first connection"] = (dialing.install_quick_dial, dialing.installed)
if not os.environ.get("ARCHIVIST_WAKU_NO_READ_AHEAD"):     # benchmarks only: fix 25 off, to compare
    GLOBAL["25 TCP read-ahead"] = (readahead.install_read_ahead, lambda: TrioTCPStream.read is readahead.read_ahead)


def apply_all() -> None:
    """Install every global patch; idempotent (each installer checks or overwrites with the same object)."""
    for install, _ in GLOBAL.values():
        install()


def applied() -> dict[str, bool]:
    """Whether each global patch is in place (for tests and diagnostics)."""
    return {name: bool(check()) for name, (_, check) in GLOBAL.items()}


apply_all()

__all__ = ["PATCHES", "GLOBAL", "Patch", "apply_all", "applied", "connections", "dialing", "fastpath", "framing",
           "gossipsub", "host", "locks", "oneframe", "peerids", "pubsub", "quietlog", "readahead", "records", "sendq",
           "streams", "unread", "yamux"]
