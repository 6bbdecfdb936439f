"""RelayValidator.vouch (core/waku/relay.py): our own edge's message (WakuNode.publish, which checked it with the
same limits) is accepted by the relay validator without being decoded and validated again; any other bytes, or
the same bytes a second time, are checked as every relayed message is."""
import time

import pytest

from core.waku import relay
from core.waku.message import WakuMessage, encode_message

CT = "/app/1/chat/proto"


@pytest.fixture
def decodes(monkeypatch) -> list:
    calls, upstream = [], relay.decode_message

    def counting(data, **kw):
        calls.append(bytes(data))
        return upstream(data, **kw)
    monkeypatch.setattr(relay, "decode_message", counting)
    return calls


def test_a_vouched_message_is_accepted_without_a_decode_and_once_only(decodes):
    v = relay.RelayValidator(1024)
    m = WakuMessage(b"one", CT, timestamp=time.time_ns())
    data = encode_message(m)
    v.vouch(data, m)
    assert v.check(bytes(data)) is m and decodes == []          # equal bytes (pubsub hands a copy)
    assert v.decoded(bytes(data)) is m and decodes == []        # delivery after validation: not decoded either
    assert v.check(bytes(data)) == m and decodes == [data]      # the same bytes again: checked in full


def test_other_bytes_than_the_vouched_ones_are_checked_in_full(decodes):
    v = relay.RelayValidator(1024)
    ours = WakuMessage(b"ours", CT, timestamp=time.time_ns())
    v.vouch(encode_message(ours), ours)
    future = encode_message(WakuMessage(b"theirs", CT, timestamp=time.time_ns() + 3600 * 10**9))
    assert v.check(future) is None and v.rejected["future timestamp"] == 1 and decodes == [future]
    v.vouch(encode_message(ours), ours)
    assert v.check(b"x" * 2000) is None and v.rejected["oversize"] == 1     # the size limit comes first
