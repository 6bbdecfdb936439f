"""When a member asks the store for archive links again (core/node/link_catchup.py), with a clock that only moves
when told to."""
from core.node.clock import FakeClock
from core.node.link_catchup import (LINK_QUERY_EVERY_S, LINK_QUERY_RETRY_S, LOOKBACK_S, OVERLAP_S, SEEN_KEPT,
                                    LinkCatchUp)

T0 = 1_800_000_000


def test_failed_queries_back_off_and_a_good_one_resets_the_back_off():
    clock = FakeClock(T0)
    links = LinkCatchUp(clock)
    assert not links.due("c")                       # nothing is due before the first query (the start's)
    delays = []
    for _ in range(len(LINK_QUERY_RETRY_S) + 2):
        links.begin("c")
        delays.append(links.finished("c", int(clock.now()), errors=[("peer", "unreachable")]))
        assert not links.due("c")
        clock.advance(delays[-1] - 1)
        assert not links.due("c")
        clock.advance(1)
        assert links.due("c")
    assert delays == [*LINK_QUERY_RETRY_S, LINK_QUERY_RETRY_S[-1], LINK_QUERY_RETRY_S[-1]]
    assert links.failures("c") == len(delays)
    links.begin("c")
    assert links.finished("c", int(clock.now()), errors=[]) == LINK_QUERY_EVERY_S
    assert links.failures("c") == 0
    links.begin("c")
    assert links.finished("c", int(clock.now()), errors=[("peer", "refused")]) == LINK_QUERY_RETRY_S[0]


def test_a_claimed_query_is_claimed_once_until_it_has_run():
    clock = FakeClock(T0)
    links = LinkCatchUp(clock)
    assert not links.claim("c")                     # no schedule before the start's query
    links.begin("c")
    links.finished("c", T0, errors=[("peer", "unreachable")])
    clock.advance(LINK_QUERY_RETRY_S[0])
    assert links.claim("c")                         # due: one tick queues it...
    assert not links.claim("c") and not links.due("c")   # ...the next ticks (queue still busy) do not
    links.begin("c")
    links.finished("c", int(clock.now()), errors=[])
    clock.advance(LINK_QUERY_EVERY_S)
    assert links.claim("c")


def test_a_running_query_is_not_due_again_however_long_it_takes():
    clock = FakeClock(T0)
    links = LinkCatchUp(clock)
    links.begin("c")
    clock.advance(10 * LINK_QUERY_EVERY_S)
    assert not links.due("c")                       # a tick during a slow query does not queue another


def test_the_first_query_looks_back_30_days_and_later_ones_from_the_last_good_one():
    clock = FakeClock(T0)
    links = LinkCatchUp(clock)
    assert links.begin("c") == (T0 - LOOKBACK_S, T0 + 1)
    links.finished("c", T0, errors=[("peer", "timeout")])
    clock.advance(5)
    assert links.begin("c") == (T0 + 5 - LOOKBACK_S, T0 + 6)   # still the whole 30 days after a failure
    links.finished("c", T0 + 5, errors=[])
    clock.advance(LINK_QUERY_EVERY_S)
    assert links.begin("c") == (T0 + 5 - OVERLAP_S, T0 + 6 + LINK_QUERY_EVERY_S)
    assert links.begin("other") == (T0 + 5 + LINK_QUERY_EVERY_S - LOOKBACK_S, T0 + 6 + LINK_QUERY_EVERY_S)


def test_a_message_is_handed_over_once_per_community_and_old_hashes_are_forgotten():
    links = LinkCatchUp(FakeClock(T0))
    assert links.first_sighting("c", b"h1") and not links.first_sighting("c", b"h1")
    assert links.first_sighting("d", b"h1")          # another community's gate decides for itself
    assert links.first_sighting("c", b"") and links.first_sighting("c", b"")   # no hash: always handed over
    for i in range(SEEN_KEPT):
        links.first_sighting("c", i.to_bytes(4, "big"))
    assert links.first_sighting("c", b"h1")          # pushed out by SEEN_KEPT newer ones: memory stays bounded
    assert not links.first_sighting("c", (SEEN_KEPT - 1).to_bytes(4, "big"))


def test_exactly_seen_kept_hashes_are_remembered():
    links = LinkCatchUp(FakeClock(T0))
    for i in range(SEEN_KEPT):
        assert links.first_sighting("c", i.to_bytes(4, "big"))
    assert not links.first_sighting("c", (0).to_bytes(4, "big"))   # the oldest of SEEN_KEPT is still known
