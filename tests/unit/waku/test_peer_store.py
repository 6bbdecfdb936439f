"""PeerStore (core/waku/peer_store.py): real SQLite files, an injected clock."""
import sqlite3

import pytest

from core.waku import enr
from core.waku.peer_store import Backoff, PeerStore


class Clock:
    def __init__(self, t: float = 1_700_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def rec(i: int, seq: int = 1, port: int = 60000):
    return enr.build(bytes([i + 1]) * 32, seq, ip="127.0.0.1", tcp=port, shards=(16, [32]))


def pid(i: int) -> str:
    return rec(i).peer_id


def addr(i: int) -> str:
    return f"/ip4/127.0.0.1/tcp/{60000 + i}"


@pytest.fixture
def clock():
    return Clock()


def test_backoff_is_exponential_and_capped():
    b = Backoff()
    assert [b.delay(n) for n in range(7)] == [0, 120, 480, 1920, 7680, 21600, 21600]
    assert Backoff(initial_s=1, factor=2, max_s=5).delay(100) == 5


def test_a_failed_peer_waits_its_backoff_then_is_offered_again(tmp_path, clock):
    st = PeerStore(tmp_path / "peers.db", clock=clock)
    st.add(pid(1), [addr(1)], "dns")
    assert [p.peer_id for p in st.candidates(5)] == [pid(1)]
    st.record_failure(pid(1))
    assert st.candidates(5) == [] and not st.can_dial(pid(1))
    clock.t += 119.9
    assert st.candidates(5) == []
    clock.t += 0.1
    assert [p.peer_id for p in st.candidates(5)] == [pid(1)]
    st.record_failure(pid(1))
    p = st.get(pid(1))
    assert (p.failures, p.next_attempt - clock.t) == (2, 480)
    st.record_success(pid(1))
    p = st.get(pid(1))
    assert (p.failures, p.last_connected, st.can_dial(pid(1))) == (0, clock.t, True)


def test_known_good_peers_come_first_and_survive_a_reopen(tmp_path, clock):
    path = tmp_path / "peers.db"
    st = PeerStore(path, clock=clock)
    for i, src in ((1, "px"), (2, "static"), (3, "dns"), (4, "inbound"), (5, "px")):
        st.add(pid(i), [addr(i)], src)
    st.record_success(pid(4))
    clock.t += 10
    st.record_success(pid(3))           # the most recently reached first
    st.record_failure(pid(5))
    clock.t += 10_000                   # 5 is out of back-off but failed: last
    st.close()
    st = PeerStore(path, clock=clock)
    assert [p.peer_id for p in st.candidates(10)] == [pid(3), pid(4), pid(2), pid(1), pid(5)]
    assert [p.peer_id for p in st.candidates(2, exclude={pid(3)})] == [pid(4), pid(2)]
    assert st.get(pid(3)).addrs == (addr(3),)


def test_addresses_merge_records_update_and_static_sticks(tmp_path, clock):
    st = PeerStore(tmp_path / "p.db", clock=clock)
    st.add(pid(1), [addr(1) + f"/p2p/{pid(1)}"], "static")
    st.add(pid(1), [addr(2)], "px", rec(1, seq=2))
    st.add(pid(1), [], "dns", rec(1, seq=1))       # an older record does not replace the newer one
    p = st.get(pid(1))
    assert p.addrs == (addr(2), addr(1)) and p.source == "static" and p.record().seq == 2
    with pytest.raises(ValueError, match="ENR of another peer"):
        st.add(pid(1), [], "px", rec(2))
    with pytest.raises(ValueError, match="unknown peer source 'gossip'"):
        st.add(pid(1), [], "gossip")


def test_discovered_peers_failing_too_often_are_forgotten_configured_ones_kept(tmp_path, clock):
    st = PeerStore(tmp_path / "p.db", clock=clock, max_failures=3)
    st.add(pid(1), [addr(1)], "px")
    st.add(pid(2), [addr(2)], "static")
    for _ in range(3):
        st.record_failure(pid(1))
        st.record_failure(pid(2))
    assert st.get(pid(1)) is None
    assert st.get(pid(2)).failures == 3


def test_capacity_evicts_failing_and_never_reached_discovered_peers(tmp_path, clock):
    st = PeerStore(tmp_path / "p.db", clock=clock, capacity=3)
    st.add(pid(1), [addr(1)], "static")
    st.add(pid(2), [addr(2)], "px")
    st.record_success(pid(2))
    st.add(pid(3), [addr(3)], "px")
    st.record_failure(pid(3))
    st.add(pid(4), [addr(4)], "dns")
    assert len(st) == 3 and st.get(pid(3)) is None
    st.add(pid(5), [addr(5)], "px")   # 4 and 5 never reached: the older one goes
    assert {p.peer_id for p in st.peers()} == {pid(1), pid(2), pid(5)}


def test_a_file_that_is_not_a_database_is_set_aside(tmp_path, clock, caplog):
    path = tmp_path / "peers.db"
    path.write_bytes(b"this is not SQLite" * 100)
    st = PeerStore(path, clock=clock)
    assert st.set_aside == tmp_path / f"peers.db.bad-{int(clock.t)}"
    assert st.set_aside.read_bytes() == b"this is not SQLite" * 100
    assert "is unusable" in caplog.text and "starting empty" in caplog.text
    st.add(pid(1), [addr(1)], "static")
    st.close()
    assert [p.peer_id for p in PeerStore(path, clock=clock).peers()] == [pid(1)]


def test_a_database_with_another_schema_is_set_aside(tmp_path, clock):
    path = tmp_path / "peers.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE peers (id TEXT)")
    con.commit()
    con.close()
    st = PeerStore(path, clock=clock)
    assert st.set_aside is not None and st.set_aside.exists() and len(st) == 0
    st.close()
    path.write_bytes(b"garbage" * 600)  # in the same second: the second bad file gets another name
    st2 = PeerStore(path, clock=clock)
    assert st2.set_aside != st.set_aside and st2.set_aside.exists()


def test_rows_that_do_not_parse_are_dropped_on_load(tmp_path, clock):
    path = tmp_path / "peers.db"
    st = PeerStore(path, clock=clock)
    st.add(pid(1), [addr(1)], "px", rec(1))
    st.close()
    con = sqlite3.connect(path)
    rows = [("not-a-peer-id", "[]", None, "px"), (pid(2), "[\"/ip4/nonsense\"]", None, "px"),
            (pid(3), "{\"a\": 1}", None, "px"), (pid(4), "[]", rec(5).to_text(), "px"),
            (pid(6), "[]", None, "telepathy"), (pid(7), "[]", "enr:garbage", "dns")]
    con.executemany("INSERT INTO peers (peer_id, addrs, enr, source, added) VALUES (?, ?, ?, ?, 0)", rows)
    con.commit()
    con.close()
    st = PeerStore(path, clock=clock)
    assert st.set_aside is None and st.dropped_rows == 6
    assert [p.peer_id for p in st.peers()] == [pid(1)] and st.get(pid(1)).record().raw == rec(1).raw
