"""Fix 18 (core/waku/libp2p_patches/records.py): py-libp2p verifies the signed peer record carried by every incoming pubsub
RPC again (a secp256k1 verification per relayed message); ours verifies a peer's record once per TTL."""
from libp2p import new_host
from libp2p.crypto.secp256k1 import Secp256k1PublicKey, create_new_key_pair
from libp2p.pubsub import gossipsub as gmod
from libp2p.pubsub import pubsub as pmod
from libp2p.pubsub.pb import rpc_pb2

from core.waku.libp2p_patches import records
from core.waku.libp2p_patches.host import noise_only_security


def _host():
    kp = create_new_key_pair()
    return new_host(key_pair=kp, sec_opt=noise_only_security(kp))


def _rpc_from(sender) -> rpc_pb2.RPC:
    rpc = rpc_pb2.RPC()
    rpc.senderRecord = records.cached_env_to_send_in_RPC(sender)[0]
    return rpc


def _counting_verifies(monkeypatch) -> list:
    calls = []
    upstream = Secp256k1PublicKey.verify
    monkeypatch.setattr(Secp256k1PublicKey, "verify", lambda self, *a: (calls.append(1), upstream(self, *a))[1])
    return calls


def test_fix18_upstream_still_verifies_the_record_on_every_rpc(monkeypatch):
    """Fails once py-libp2p stops verifying an unchanged record again: then drop fix 18."""
    receiver, sender = _host(), _host()
    calls = _counting_verifies(monkeypatch)
    rpc = _rpc_from(sender)
    assert all(records._upstream_consume_record(rpc, receiver, sender.get_id()) for _ in range(5))
    assert len(calls) == 5


def test_fix18_a_peers_record_is_verified_once(monkeypatch):
    assert pmod.maybe_consume_signed_record is records.cached_consume_signed_record
    assert gmod.maybe_consume_signed_record is records.cached_consume_signed_record
    receiver, sender, other = _host(), _host(), _host()
    calls = _counting_verifies(monkeypatch)
    rpc = _rpc_from(sender)
    assert all(records.cached_consume_signed_record(rpc, receiver, sender.get_id()) for _ in range(100))
    assert len(calls) == 1
    # the same bytes from another peer are not taken on trust: checked, and refused (the record names the sender)
    assert not records.cached_consume_signed_record(rpc, receiver, other.get_id())
    assert not records.cached_consume_signed_record(rpc, receiver, other.get_id())
    # a record that changes is checked again; a tampered one is refused
    tampered = rpc_pb2.RPC()
    tampered.senderRecord = rpc.senderRecord[:-1] + bytes([rpc.senderRecord[-1] ^ 1])
    assert not records.cached_consume_signed_record(tampered, receiver, sender.get_id())
    # after the TTL the record is verified again
    accepted = records._accepted_records[receiver]
    t, raw = accepted[sender.get_id()]
    accepted[sender.get_id()] = (t - records.SENDER_RECORD_TTL_S - 1, raw)
    before = len(calls)
    assert records.cached_consume_signed_record(rpc, receiver, sender.get_id())
    assert len(calls) == before + 1
