"""Kill -9 trials: a control node process (ControlNode: start, which builds, then apply_retention) on a prepared
message store, with a fake clock far enough ahead that retention has work, is killed with SIGKILL after a random
delay (seeded RNG); it is then restarted and left to finish. After every kill and after every restart, each source
message is still in `waku_messages` or in exactly one archive in `data` (every archive decoded): none lost, none
duplicated; after the restart the folder passes `archivist verify` and equals an uninterrupted run byte for byte.

The random delay is only the source of randomness: the assertions are about the invariant, never about timing.
Each child is forked from a fork server with the node's modules loaded (forked.py) and is handed the channels' keys
the parent derived; the "fresh" template's databases are made once, before the trials (no kill lands before the
child's ready marker). Run this file as a script (`... child ROOT NOW CONFIG`) to get the same child as a process
of its own."""
from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path

WEEK = 7 * 24 * 3600
TRIALS = 50


def _open_node(root: Path, cfg: dict, now: float, bus=None):
    from core.node import events as E
    from core.node.clock import FakeClock
    from core.node.community import CommunityConfig, NodePaths
    from core.node.control import ControlNode
    from core.storage.archive_state import ArchiveStateDB
    paths = NodePaths(root).ensure()
    state = ArchiveStateDB(paths.state_db)
    ccfg = CommunityConfig(cfg["id"], "", "control", cfg["chats"])
    return ControlNode(ccfg, paths, state, bus or E.EventBus(), FakeClock(now)), state


def child(root: str, now: str, cfg: str, write=lambda b: os.write(1, b)) -> None:
    """What the killed process does; markers written with `write` (stdout by default): S ready, B build begins,
    b start done, r retention done, each but S with the seconds since S."""
    from core.node import events as E
    mark = lambda s: write(s.encode())  # noqa: E731  (unbuffered: the parent sees exactly what happened)
    t0 = time.monotonic()
    bus = E.EventBus()
    bus.subscribe(lambda e: mark(f"B{time.monotonic() - t0:.4f};") if e.name == E.CREATING_HISTORY_ARCHIVES
                  else None)
    node, _ = _open_node(Path(root), json.loads(cfg), float(now), bus)
    mark("S")
    t0 = time.monotonic()
    node.start()
    mark(f"b{time.monotonic() - t0:.4f};")
    node.apply_retention()
    mark(f"r{time.monotonic() - t0:.4f};")


# ---- the parent -----------------------------------------------------------------------------------------------

def _hashes(db: Path) -> set[bytes]:
    con = sqlite3.connect(db)
    try:
        return {bytes.fromhex(h[2:]) for (h,) in con.execute("SELECT hash FROM waku_messages")}
    finally:
        con.close()


def _archived(folder: Path) -> Counter:
    from core.archive.folder import ArchiveFolder
    if not (folder / "index").exists():
        return Counter()
    f = ArchiveFolder(folder, recover=False)   # read only: what a crash left, before any repair
    return Counter(m.hash for aid, _ in f.ordered() for m in f.read_archive(aid).messages)


def _check_invariant(root: Path, cid: str, source: set[bytes]) -> None:
    stored = _hashes(root / "messages.sqlite")
    archived = _archived(root / "archivedata" / cid)
    lost = [h for h in source if h not in stored and not archived[h]]
    dup = [h for h, n in archived.items() if n > 1]
    assert not lost, f"{len(lost)} messages lost"
    assert not dup, f"{len(dup)} messages in two archives"
    assert set(archived) <= source


def _forked_child(conn, root: str, now: str, cfg: str, keys: dict[str, bytes]) -> None:
    """child() in a forked child, with the channels' payload keys the parent derived: ControlNode derives them when
    it opens (PBKDF2, a third of the child's CPU before its ready marker, the same three keys in every child)."""
    from core.status import topics
    derive = topics.symmetric_key
    topics.symmetric_key = lambda chat_id: keys.get(chat_id) or derive(chat_id)
    child(root, now, cfg, conn.send_bytes)


def _run_child(root: Path, now: float, cfg: dict, delay: float | None, after: str = "S") -> str:
    """Start the child, wait for its marker `after`, kill it `delay` seconds later (None: let it finish).
    Returns the markers it wrote."""
    from core.status.topics import symmetric_key
    from tests.support import forked
    reader, writer = multiprocessing.Pipe(duplex=False)
    keys = {c: symmetric_key(c) for c in cfg["chats"]}
    proc = forked.start(_forked_child, writer, str(root), repr(now), json.dumps(cfg), keys)
    writer.close()                             # the child's copy is the only writer: EOF when it ends

    def read() -> bytes:
        try:
            return reader.recv_bytes()
        except EOFError:
            return b""
    out = b""
    while after.encode() not in out:
        assert reader.poll(120), "child did not start"
        chunk = read()
        if not chunk:
            break                              # it finished before the aimed-at phase: a kill after the end
        out += chunk
    if delay is not None:                      # the random kill point: `delay` s on, unless the child ended first
        proc.join(delay)
        if proc.exitcode is None:
            proc.kill()
    proc.join(120)
    assert proc.exitcode is not None, "child did not end"
    while chunk := read():
        out += chunk
    reader.close()
    if delay is None:
        assert proc.exitcode == 0, f"child exit code {proc.exitcode} (its traceback is on stderr)"
    return out.decode()


def _finish(root: Path, cfg: dict, now: float) -> None:
    """The restart: a new ControlNode on the same files, left to finish (start, then retention)."""
    node, state = _open_node(root, cfg, now)
    try:
        node.start()
        node.apply_retention()
    finally:
        node.close()
        state.close()


def _snapshot(root: Path, cid: str) -> tuple[bytes, bytes, set[bytes]]:
    f = root / "archivedata" / cid
    return (f / "data").read_bytes(), (f / "index").read_bytes(), _hashes(root / "messages.sqlite")


def test_control_node_survives_sigkill_during_build_and_retention(tmp_path, fork_server):
    from core.archive.build import torrent_path
    from core.archive.verify import verify_folder
    from core.synth import synthesize
    syn = synthesize(tmp_path / "src.sqlite", messages=1500, weeks=6, channels=3, seed=7, min_payload=40,
                     max_payload=600)
    cfg = {"id": syn.community_id, "chats": syn.chat_ids}
    source = _hashes(Path(syn.path))
    now = syn.start + 8 * WEEK + 2 * 3600     # 30-day retention: the oldest ~60% of the messages are due to go
    # two starting points: nothing archived yet, and the first three weeks archived by an earlier run
    templates = {}
    fresh = tmp_path / "tpl-fresh"
    fresh.mkdir()
    shutil.copy(syn.path, fresh / "messages.sqlite")
    node, state = _open_node(fresh, cfg, now)   # the node's databases made once here, not in each trial before
    node.close()                                # its ready marker (no kill lands before it): nothing archived
    state.close()
    assert not (fresh / "archivedata" / syn.community_id / "index").exists()
    templates["fresh"] = fresh
    partial = tmp_path / "tpl-partial"
    partial.mkdir()
    shutil.copy(syn.path, partial / "messages.sqlite")
    _finish(partial, cfg, syn.start + 3 * WEEK + 2 * 3600)
    assert (partial / "archivedata" / syn.community_id / "index").exists()
    templates["partial"] = partial
    # uninterrupted runs, two of each: the reference end state (the same bytes both times), and how long build and
    # retention take here (the shorter of the two: a run slowed by the machine would aim the kills past the end)
    reference, timing = {}, {}
    for name, tpl in templates.items():
        runs = []
        for k in range(2):
            root = tmp_path / f"ref-{name}-{k}"
            shutil.copytree(tpl, root)
            markers = _run_child(root, now, cfg, None)
            assert "r" in markers, markers
            # seconds from ready to the build's start, the end of start() and the end of retention
            runs.append((_snapshot(root, syn.community_id),
                         tuple(float(markers.split(c)[1].split(";")[0]) for c in "Bbr")))
        assert runs[0][0] == runs[1][0]
        reference[name] = runs[0][0]
        timing[name] = min((t for _, t in runs), key=lambda t: t[2])
        assert len(reference[name][2]) < len(source)           # retention had work
    rng = random.Random(61)
    where = Counter()
    for i in range(TRIALS):
        name = "fresh" if i % 2 == 0 else "partial"
        root = tmp_path / f"trial-{i}"
        shutil.copytree(templates[name], root)
        begun, built, done = timing[name]
        # a third of the kills anywhere in the run, a third aimed at the build, a third at retention
        after, delay = [("S", rng.uniform(0, done * 1.05)), ("B", rng.uniform(0, built - begun)),
                        ("b", rng.uniform(0, done - built))][i % 3]
        markers = _run_child(root, now, cfg, delay, after)
        where["finished" if "r" in markers else "mid-retention" if "b" in markers
              else "mid-build" if "B" in markers else "before-build"] += 1
        _check_invariant(root, syn.community_id, source)        # right after the kill, before any repair
        _finish(root, cfg, now)
        _check_invariant(root, syn.community_id, source)
        folder = root / "archivedata" / syn.community_id
        rep = verify_folder(folder, torrent_path(root / "torrents", syn.community_id))
        assert rep.ok, [f"{f.code}: {f.message}" for f in rep.findings]
        assert _snapshot(root, syn.community_id) == reference[name], f"trial {i} ({name}, {markers!r})"
        shutil.rmtree(root)
    print(f"\nKILL-9 control node: {TRIALS} trials, kills landed {dict(where)}; "
          "uninterrupted start+build / +retention: " + ", ".join(f"{n} {b:.2f} s / {r:.2f} s"
                                                                for n, (_, b, r) in timing.items()))
    assert where["mid-build"] + where["mid-retention"] >= TRIALS // 3


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "child":
    child(*sys.argv[2:])
