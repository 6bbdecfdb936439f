"""Fixes 9 and 18: the signed peer record every pubsub RPC carries, marshalled and verified once per TTL.

9. Every outgoing pubsub RPC carries the signed peer record, re-marshalled from the cached envelope each time
   (peer/peerstore.py env_to_send_in_RPC -> Envelope.marshal_envelope, a secp256k1 key serialization, ~0.4 ms):
   the bytes are cached per host for SENDER_RECORD_TTL_S.
18. Every incoming pubsub RPC's signed peer record is parsed and its secp256k1 signature verified again
    (pubsub/pubsub.py continuously_read_stream -> pubsub/utils.py maybe_consume_signed_record; ~0.4 ms per RPC,
    the largest single cost of a relayed message in the node's profile): the bytes last accepted from each
    peer are remembered per host for SENDER_RECORD_TTL_S, and the same bytes from the same peer are accepted
    without verifying them again (the counterpart of fix 9 on the receiving side).
"""
from __future__ import annotations

import time
import weakref

from libp2p.pubsub import gossipsub as _gossipsub_module
from libp2p.pubsub import pubsub as _pubsub_module

SENDER_RECORD_TTL_S = 30.0
_upstream_env_to_send = _pubsub_module.env_to_send_in_RPC
_sender_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cached_env_to_send_in_RPC(host) -> tuple[bytes, bool]:
    """fix 9: the signed peer record attached to pubsub RPCs, cached per host."""
    now = time.monotonic()
    hit = _sender_records.get(host)
    if hit is not None and now - hit[0] < SENDER_RECORD_TTL_S:
        return hit[1]
    value = _upstream_env_to_send(host)
    _sender_records[host] = (now, value)
    return value


def install_sender_record_cache() -> None:
    _pubsub_module.env_to_send_in_RPC = cached_env_to_send_in_RPC
    _gossipsub_module.env_to_send_in_RPC = cached_env_to_send_in_RPC


_upstream_consume_record = _pubsub_module.maybe_consume_signed_record
_accepted_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # host -> {peer: (time, bytes)}
MAX_ACCEPTED_RECORDS = 4096   # per host; the table is emptied when it is full (they are re-verified once)


def cached_consume_signed_record(msg, host, peer_id=None) -> bool:
    """fix 18: a peer's signed record is verified (and stored) once per SENDER_RECORD_TTL_S, not per RPC."""
    if peer_id is None or not msg.HasField("senderRecord"):
        return _upstream_consume_record(msg, host, peer_id)
    accepted = _accepted_records.setdefault(host, {})
    now = time.monotonic()
    hit = accepted.get(peer_id)
    if hit is not None and now - hit[0] < SENDER_RECORD_TTL_S and hit[1] == msg.senderRecord:
        return True
    ok = _upstream_consume_record(msg, host, peer_id)
    if ok:
        if len(accepted) >= MAX_ACCEPTED_RECORDS:
            accepted.clear()
        accepted[peer_id] = (now, msg.senderRecord)
    return ok


def install_verified_record_cache() -> None:
    _pubsub_module.maybe_consume_signed_record = cached_consume_signed_record
    _gossipsub_module.maybe_consume_signed_record = cached_consume_signed_record

