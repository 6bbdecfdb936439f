"""A lightpush request is encoded once on the node (core/waku/node.py: _lightpush_publish hands its encoding to
publish) and not decoded again by the relay validator (RelayValidator.vouch): between real nodes on 127.0.0.1."""
import time

from core.waku import node as node_module
from core.waku import relay
from core.waku.message import WakuMessage

PS = "/waku/2/rs/16/32"
CT = "/app/1/chat/proto"


def _counting(monkeypatch, module, name) -> list:
    calls, upstream = [], getattr(module, name)

    def counting(*a, **kw):
        calls.append(a[0])
        return upstream(*a, **kw)
    monkeypatch.setattr(module, name, counting)
    return calls


def test_a_lightpush_is_encoded_once_and_not_decoded_by_the_relay_validator(make_node, monkeypatch):
    server = make_node()
    client = make_node(store=False, shards=(1,))        # a light client: it does not relay the server's shard
    client.add_peer(server.listen_addrs[0])
    encodes = _counting(monkeypatch, node_module, "encode_message")
    decodes = _counting(monkeypatch, relay, "decode_message")
    m = WakuMessage(b"once", CT, timestamp=time.time_ns())
    assert client.lightpush(server.peer_id, PS, m).status_code == 200
    assert [r.message for r in server.query_store(None, [CT], pubsub_topic=PS)] == [m]
    assert encodes == [m] and decodes == []
