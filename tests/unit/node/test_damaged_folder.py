"""A control node whose archive folder cannot be trusted (an index of garbage bytes) says so once, with the error's
code and one line, and does nothing for that community: no build, no seeding, no announcement, no retention. The
engine goes on with its other communities."""
from __future__ import annotations

import sqlite3

from core.node import events as E
from core.node.clock import FakeClock
from core.node.engine import Engine

from .support import T0, WEEK, owner

DAY = 24 * 3600


def _count(db) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT COUNT(*) FROM waku_messages").fetchone()[0]
    finally:
        con.close()


def test_garbage_index_stops_that_community_only(tmp_path):
    from core.status.traffic import to_archive_message
    from core.storage import waku_messages
    clock = FakeClock(T0)
    bad, good = owner(tmp_path, seed=41), owner(tmp_path, seed=42)
    eng = Engine(tmp_path / "node", clock=clock)
    events = []
    eng.bus.subscribe(events.append)
    con = waku_messages.connect(eng.paths.messages_db)
    for o in (bad, good):
        waku_messages.insert_messages(con, (to_archive_message(m) for m in o.gen.messages(200, start=T0,
                                                                                          span=3 * WEEK)))
    con.commit()
    con.close()
    folder = eng.paths.archive_dir / bad.cid
    folder.mkdir(parents=True)
    (folder / "data").write_bytes(b"\x01" * 300_000)
    (folder / "index").write_bytes(b"\xff\xfe garbage, not an index \x00" * 10)
    before = (folder / "data").read_bytes(), (folder / "index").read_bytes()
    clock.set(T0 + 3 * WEEK + 3 * 3600 + 60 * DAY)              # builds due and retention has work
    stored = _count(eng.paths.messages_db)
    try:
        eng.add_community(bad.cfg).result(60)                  # does not raise: the engine keeps going
        eng.add_community(good.cfg).result(60)
        for f in eng.tick_all():
            f.result(60)
        mine = [e for e in events if e.community_id == bad.cid]
        errors = [e for e in mine if e.name == E.ERROR]
        assert len(errors) == 1 and errors[0].data["code"] and "\n" not in errors[0].data["message"]
        assert errors[0].data["message"]
        assert not [e for e in mine if e.name in (E.CREATING_HISTORY_ARCHIVES, E.HISTORY_ARCHIVES_CREATED,
                                                  E.HISTORY_ARCHIVES_SEEDING)]
        node = eng.nodes[bad.cid]
        assert node.announcements == 0 and node.broken and node.apply_retention() == 0
        assert ((folder / "data").read_bytes(), (folder / "index").read_bytes()) == before
        state = eng.community_state(bad.cid)                   # the GUI's snapshot still works
        assert state.next_archive_at is None and "archives stopped" in state.waiting_reason
        # the other community built, seeded and ran retention
        theirs = [e.name for e in events if e.community_id == good.cid]
        assert E.HISTORY_ARCHIVES_CREATED in theirs and E.HISTORY_ARCHIVES_SEEDING in theirs
        assert _count(eng.paths.messages_db) == stored - 200    # only the good community's messages went
    finally:
        eng.stop()
