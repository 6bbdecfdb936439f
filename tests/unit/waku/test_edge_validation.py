"""Validation at the edge: message size limit (1 MiB by default), timestamp skew (20 s into the future by
default) with one clear reason per refusal, at relay, publish and store insertion. Fake clocks, no waiting."""
import pytest

from core.waku.message import (DEFAULT_MAX_MESSAGE_SIZE, NS, STATUS_MAX_MESSAGE_SIZE, InvalidMessage, WakuMessage,
                               check_timestamp, encode_message, validate_message)
from core.waku.relay import RelayValidator
from core.waku.store_db import Filter, MessageStore

NOW = 1_700_000_000 * NS
CT = "/app/1/chat/proto"
PS = "/waku/2/rs/16/32"
CENTURY = 100 * 365 * 86_400 * NS


def refusal(ts, *, now=NOW, limit=20 * NS) -> str:
    with pytest.raises(InvalidMessage) as e:
        check_timestamp(ts, now_ns=now, max_future_ns=limit)
    return str(e.value)


def test_timestamp_refusals_say_what_was_wrong():
    assert refusal(NOW + 3600 * NS) == "timestamp 3600 s in the future (limit 20 s)"
    assert refusal(-5) == "negative timestamp"
    assert refusal(None) == "missing timestamp"
    assert refusal(0) == "missing timestamp"
    assert refusal(NOW + 2 * NS, limit=NS // 2) == "timestamp 2 s in the future (limit 0.5 s)"


def test_timestamp_limit_boundary_and_the_past_is_fine():
    check_timestamp(NOW + 20 * NS, now_ns=NOW, max_future_ns=20 * NS)      # exactly at the limit
    check_timestamp(1, now_ns=NOW, max_future_ns=20 * NS)                  # history is always fine
    assert "in the future" in refusal(NOW + 20 * NS + 1)
    check_timestamp(NOW + CENTURY, now_ns=NOW, max_future_ns=2 * CENTURY)  # configurable


def test_default_size_limit_is_the_status_fleets_1_mib():
    assert DEFAULT_MAX_MESSAGE_SIZE == STATUS_MAX_MESSAGE_SIZE == 1024 * 1024
    ok = WakuMessage(b"x" * (1000 * 1024), CT, timestamp=NOW)  # 1000 KiB: nwaku's 150 KiB default refuses it
    validate_message(ok, now_ns=NOW)
    big = WakuMessage(b"x" * (1024 * 1024), CT, timestamp=NOW)
    with pytest.raises(InvalidMessage, match=r"message is \d+ bytes \(max 1048576\)") as e:
        validate_message(big, now_ns=NOW)
    assert e.value.reason == "oversize"
    validate_message(big, max_size=2 * 1024 * 1024, now_ns=NOW)  # configurable


def test_validate_message_checks_the_clock_it_is_given():
    m = WakuMessage(b"x", CT, timestamp=NOW + 3600 * NS)
    with pytest.raises(InvalidMessage, match=r"^timestamp 3600 s in the future \(limit 20 s\)$") as e:
        validate_message(m, now_ns=NOW)
    assert e.value.reason == "future timestamp"
    validate_message(m, now_ns=NOW + 3600 * NS)
    validate_message(m, now_ns=NOW, max_future_ns=3600 * NS)


def test_relay_validator_counts_timestamp_refusals_by_reason():
    clock = [NOW]
    v = RelayValidator(1024 * 1024, max_future_s=20, clock=lambda: clock[0])
    far = encode_message(WakuMessage(b"a", CT, timestamp=NOW + CENTURY))
    assert v.check(far) is None
    assert v.check(encode_message(WakuMessage(b"b", CT, timestamp=-1))) is None
    assert v.check(encode_message(WakuMessage(b"c", CT))) is None
    assert v.check(encode_message(WakuMessage(b"d", CT, timestamp=NOW + 19 * NS))) is not None
    assert v.rejected == {"future timestamp": 1, "negative timestamp": 1, "missing timestamp": 1}
    clock[0] += CENTURY  # the clock caught up: the same bytes are now fine
    assert v.check(far) is not None


def test_store_never_keeps_a_far_future_message_at_the_head_of_latest_queries():
    clock = [NOW]
    s = MessageStore(clock=lambda: clock[0])
    try:
        assert not s.add(PS, WakuMessage(b"from 2123", CT, timestamp=NOW + CENTURY))
        assert not s.add(PS, WakuMessage(b"negative", CT, timestamp=-1))
        assert s.add(PS, WakuMessage(b"now", CT, timestamp=NOW))
        assert s.add(PS, WakuMessage(b"a little ahead", CT, timestamp=NOW + 10 * NS))
        assert s.refused == {"future timestamp": 1, "negative timestamp": 1}
        latest = s.page(Filter(content_topics=[CT]), forward=False, limit=1)
        assert latest[0].message.payload == b"a little ahead"
        assert s.count() == 2
    finally:
        s.close()


def test_store_future_limit_is_configurable():
    s = MessageStore(clock=lambda: NOW, max_future_ns=2 * CENTURY)
    try:
        assert s.add(PS, WakuMessage(b"far", CT, timestamp=NOW + CENTURY))
    finally:
        s.close()


def test_wakunode_flags_reach_the_node_config(monkeypatch):
    import argparse

    from core.waku import cli, embedded
    seen = {}

    class Stub:
        def __init__(self, cfg):
            seen["cfg"] = cfg

        def start(self):
            raise OSError("stop here")  # cmd_wakunode reports it and returns 2

        def stop(self):
            pass
    monkeypatch.setattr(embedded, "EmbeddedWakuBackend", Stub)
    p = argparse.ArgumentParser()
    cli.register(p.add_subparsers())
    a = p.parse_args(["wakunode", "--no-store", "--max-message-size", "2000000", "--max-future-s", "5",
                      "--read-timeout-s", "2.5"])
    assert a.func(a) == 2
    cfg = seen["cfg"]
    assert (cfg.max_message_size, cfg.max_future_s, cfg.read_timeout_s) == (2_000_000, 5.0, 2.5)
    a = p.parse_args(["wakunode", "--no-store"])
    a.func(a)
    assert (seen["cfg"].max_message_size, seen["cfg"].max_future_s, seen["cfg"].read_timeout_s) == \
        (1024 * 1024, 20.0, 10.0)
