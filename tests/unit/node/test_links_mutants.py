"""The archive-link gate (core/node/links.py): each refusal with its exact reason, detail, log line and counter,
and each boundary of the clock rules (written against the survivors of `make mutation`, docs/QUALITY.md).
Real envelopes, real SQLite, an injected clock."""
from __future__ import annotations

import logging

import pytest
from coincurve import PrivateKey

from core.archive import codec
from core.node import links
from core.node.links import FORGED, FUTURE_CLOCK, MALFORMED, OLDER_CLOCK, REPLAYED, LinkGate
from core.status import topics
from core.status.application_metadata import ArchiveLinkMessage, archive_link_envelopes
from core.storage.archive_state import ArchiveStateDB

KEY = PrivateKey(codec.keccak256(b"archivist link gate mutants key"))
OTHER = PrivateKey(codec.keccak256(b"archivist link gate someone else"))
CID = "0x" + KEY.public_key.format(compressed=True).hex()
CHAT = topics.magnetlinks_chat_id(CID)
NOW = 1_790_000_000_000
LINK_A = "magnet:?xt=urn:btih:" + "a" * 40
LINK_B = "magnet:?xt=urn:btih:" + "b" * 40


def envelope(clock: int, link: str, key: PrivateKey = KEY) -> bytes:
    [(_topic, env)] = archive_link_envelopes(key, clock, link, CID, chat_ids=(CHAT,))
    return env


@pytest.fixture
def db():
    d = ArchiveStateDB(":memory:")
    yield d
    d.close()


def test_reason_names_are_the_stored_counter_keys():
    # these strings are counted in the state database and shown by the GUI: renaming one loses the old counts
    assert (FORGED, OLDER_CLOCK, FUTURE_CLOCK, REPLAYED, MALFORMED) == (
        "not-community-key", "older-clock", "future-clock", "replayed", "malformed")
    assert links.DEFAULT_MAX_FUTURE_MS == 20_000


def test_accepted_link_raises_the_stored_clock_and_returns_the_message(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    d = gate.consider_envelope(envelope(NOW - 5, LINK_A), CHAT)
    assert (d.accepted, d.reason, d.detail) == (True, "accepted", "")
    assert (d.message.clock, d.message.link) == (NOW - 5, LINK_A)
    assert db.archive_info(CID).magnetlink_clock == NOW - 5
    assert db.rejections(CID) == {}


def test_link_signed_by_another_key_is_refused_as_forged(db, caplog):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    with caplog.at_level(logging.INFO, logger="core.node.links"):
        d = gate.consider_envelope(envelope(NOW, LINK_A, OTHER), CHAT)
    assert (d.accepted, d.reason, d.message) == (False, FORGED, None)
    assert d.detail == "archive-link message is not signed by the community key"
    assert caplog.messages == [f"ignored archive link for {CID}: not-community-key "
                               "(archive-link message is not signed by the community key)"]
    assert db.rejections(CID) == {FORGED: 1}
    assert db.archive_info(CID).magnetlink_clock == 0


def test_undecodable_envelope_is_refused_as_malformed(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    d = gate.consider_envelope(b"\x01 not an envelope", CHAT)
    assert (d.accepted, d.reason, d.message) == (False, MALFORMED, None)
    assert d.detail == "envelope of 17 bytes is too short for payload v1"
    # on the wrong chat the symmetric key differs: it does not open either
    d = gate.consider_envelope(envelope(NOW, LINK_A), topics.magnetlinks_chat_id("0x03" + "00" * 32))
    assert (d.accepted, d.reason) == (False, MALFORMED)
    assert db.rejections(CID) == {MALFORMED: 2}


def test_older_clock_is_refused_an_equal_clock_is_not(db, caplog):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    db.set_magnetlink_clock(CID, NOW - 100)
    with caplog.at_level(logging.INFO, logger="core.node.links"):
        d = gate.consider(ArchiveLinkMessage(NOW - 101, LINK_A, b""))
    assert (d.accepted, d.reason, d.detail) == (False, OLDER_CLOCK, f"clock {NOW - 101} < stored {NOW - 100}")
    assert d.message.link == LINK_A and d.stored_clock == NOW - 100
    assert caplog.messages == [f"ignored archive link for {CID}: older-clock (clock {NOW - 101} < stored {NOW - 100})"]
    assert gate.consider(ArchiveLinkMessage(NOW - 100, LINK_A, b"")).accepted     # same clock, new link
    assert db.rejections(CID) == {OLDER_CLOCK: 1}


def test_future_limit_is_inclusive_and_the_detail_gives_seconds(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW, max_future_ms=5_000)
    d = gate.consider(ArchiveLinkMessage(NOW + 5_001, LINK_A, b""))
    assert (d.accepted, d.reason, d.message.clock) == (False, FUTURE_CLOCK, NOW + 5_001)
    assert d.detail == f"clock {NOW + 5_001} is 5 s in the future (limit 5 s)"
    d = gate.consider(ArchiveLinkMessage(NOW + 7_600, LINK_A, b""))
    assert d.detail == f"clock {NOW + 7_600} is 8 s in the future (limit 5 s)"
    assert db.archive_info(CID).magnetlink_clock == 0            # a refused link never moves the stored clock
    assert gate.consider(ArchiveLinkMessage(NOW + 5_000, LINK_A, b"")).accepted
    assert db.rejections(CID) == {FUTURE_CLOCK: 2}


def test_future_detail_rounds_milliseconds_to_whole_seconds(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW, max_future_ms=1_500)
    d = gate.consider(ArchiveLinkMessage(NOW + 9_502, LINK_A, b""))
    assert d.detail == f"clock {NOW + 9_502} is 10 s in the future (limit 2 s)"


def test_default_limit_is_20_seconds_against_the_injected_clock(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    assert not gate.consider(ArchiveLinkMessage(NOW + 20_001, LINK_A, b"")).accepted
    assert gate.consider(ArchiveLinkMessage(NOW + 20_000, LINK_A, b"")).accepted


def test_default_clock_is_wall_time_in_milliseconds(db):
    import time
    gate = LinkGate(db, CID)
    before = time.time_ns() // 1_000_000
    assert before - 1_000 <= gate.now_ms() <= time.time_ns() // 1_000_000


def test_replays_of_the_last_or_the_pending_link_are_refused(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    db.set_last_magnetlink(CID, LINK_A)
    d = gate.consider(ArchiveLinkMessage(NOW, LINK_A, b""))
    assert (d.accepted, d.reason, d.detail, d.message.link) == (False, REPLAYED, "link already processed", LINK_A)
    db.set_pending_link(CID, LINK_B, NOW - 1, 0.0)
    assert gate.consider(ArchiveLinkMessage(NOW, LINK_B, b"")).reason == REPLAYED
    assert db.rejections(CID) == {REPLAYED: 2}
    assert db.archive_info(CID).magnetlink_clock == 0
    d = gate.consider(ArchiveLinkMessage(NOW, "magnet:?xt=urn:btih:" + "c" * 40, b""))
    assert d.accepted and db.archive_info(CID).magnetlink_clock == NOW


def test_rejections_are_counted_per_community(db):
    gate = LinkGate(db, CID, now_ms=lambda: NOW)
    other = LinkGate(db, "0x03" + "11" * 32, now_ms=lambda: NOW)
    gate.consider(ArchiveLinkMessage(NOW + 10 ** 9, LINK_A, b""))
    gate.consider(ArchiveLinkMessage(NOW + 10 ** 9, LINK_A, b""))
    other.consider(ArchiveLinkMessage(NOW + 10 ** 9, LINK_A, b""))
    assert db.rejections(CID) == {FUTURE_CLOCK: 2}
    assert db.rejections("0x03" + "11" * 32) == {FUTURE_CLOCK: 1}
