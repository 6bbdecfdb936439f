"""The archive-link gate (core/node/links.py) refuses a link whose clock is too far ahead of ours: otherwise
one far-future link raises the stored clock and every later, honest link is refused as "older-clock"."""
import logging

from coincurve import PrivateKey

from core.archive import codec
from core.node.links import FUTURE_CLOCK, LinkGate
from core.status import topics
from core.status.application_metadata import archive_link_envelopes
from core.storage.archive_state import ArchiveStateDB

KEY = PrivateKey(codec.keccak256(b"archivist link clock test key"))
CID = "0x" + KEY.public_key.format(compressed=True).hex()
CHAT = topics.magnetlinks_chat_id(CID)
NOW_MS = 1_790_000_000_000
HOUR_MS = 3_600_000


def envelope(clock_ms: int, link: str) -> bytes:
    [(_topic, env)] = archive_link_envelopes(KEY, clock_ms, link, CID, chat_ids=(CHAT,))
    return env


def test_link_an_hour_ahead_is_refused_counted_and_logged_and_a_later_normal_link_is_accepted(caplog):
    db = ArchiveStateDB(":memory:")
    now = [NOW_MS]
    gate = LinkGate(db, CID, now_ms=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="core.node.links"):
        d = gate.consider_envelope(envelope(NOW_MS + HOUR_MS, "magnet:?xt=urn:btih:" + "a" * 40), CHAT)
    assert (d.accepted, d.reason) == (False, FUTURE_CLOCK)
    assert db.rejections(CID) == {FUTURE_CLOCK: 1}
    assert "future-clock (clock 1790003600000 is 3600 s in the future (limit 20 s))" in caplog.text
    assert db.archive_info(CID).magnetlink_clock < NOW_MS  # the stored clock did not move

    now[0] += 60_000  # a minute later the control node announces normally
    d = gate.consider_envelope(envelope(NOW_MS + 60_000, "magnet:?xt=urn:btih:" + "b" * 40), CHAT)
    assert (d.accepted, d.reason) == (True, "accepted")
    db.close()


def test_small_drift_within_the_limit_is_accepted_and_the_limit_is_configurable():
    db = ArchiveStateDB(":memory:")
    gate = LinkGate(db, CID, now_ms=lambda: NOW_MS)
    assert gate.consider_envelope(envelope(NOW_MS + 20_000, "magnet:?xt=urn:btih:" + "c" * 40), CHAT).accepted
    lenient = LinkGate(db, CID, now_ms=lambda: NOW_MS, max_future_ms=2 * HOUR_MS)
    assert lenient.consider_envelope(envelope(NOW_MS + HOUR_MS, "magnet:?xt=urn:btih:" + "d" * 40), CHAT).accepted
    db.close()
