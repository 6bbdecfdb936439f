"""No import ever loses or duplicates a message: the member node's importer, `archivist import`, and kill -9.

Loss 1 of issue 14: a week over 30 MB is several archives with the same window. "latest" fetched only the last
chunk and the importer replaced the whole window with it; a later "all" imported the first chunk and replaced the
window again, deleting the second chunk's messages (36,000 messages -> 19,114).
"""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.archive.codec import decode_index
from core.node import events as E
from core.node.clock import FakeClock
from core.node.community import CommunityConfig, NodePaths
from core.node.hydrate import reference_hydrator
from core.node.import_cli import import_folder
from core.node.member import MemberNode
from core.storage.archive_state import ArchiveStateDB
from core.storage.member_history import MemberHistory
from core.torrent.selection import Selection
from tests.support.chunked import COMMUNITY, T0, WEEK, build_folder, random_messages

ROOT = Path(__file__).resolve().parents[3]


def member(tmp_path, history):
    paths = NodePaths(tmp_path / "member")
    cfg = CommunityConfig(community_id=COMMUNITY, role="member")
    state = ArchiveStateDB(paths.ensure().state_db)
    return MemberNode(cfg, paths, state, E.EventBus(), FakeClock(), hydrator=reference_hydrator(history)), state


def hashes(history: MemberHistory) -> list[bytes]:
    return [bytes.fromhex(r["id"][2:]) for r in history.messages(COMMUNITY, limit=10 ** 9)]


def test_latest_then_all_keeps_every_chunk(tmp_path):
    """Loss 1, through the member node's own path (Selection.choose -> MemberNode.import_archives). Failed before
    the fix: "latest" took one chunk, then "all" deleted it."""
    rng = random.Random(1)
    ms = random_messages(rng, 3, 600)
    node, state = None, None
    history = MemberHistory(tmp_path / "history.sqlite")
    node, state = member(tmp_path, history)
    folder = build_folder(node.paths.archive_dir / COMMUNITY, ms, cap=8_000, weeks=3)
    index = folder.entries
    newest = [a for a, e in index.items() if e.end == T0 + 3 * WEEK]
    assert len(newest) > 2                                         # the newest week is several chunks
    latest = Selection("latest").choose(index)
    assert sorted(latest) == sorted(newest)                        # "latest" is every chunk of that week
    node.import_archives(index, latest)
    assert sorted(hashes(history)) == sorted(m.hash for m in ms if m.timestamp >= T0 + 2 * WEEK)
    node.import_archives(index, Selection("all").choose(index))
    assert sorted(hashes(history)) == sorted(m.hash for m in ms)
    assert state.archive_ids(COMMUNITY, imported=True) == set(index)
    history.close()
    state.close()


def test_a_chunk_imported_alone_by_an_older_version_is_not_undone(tmp_path):
    """A history where one chunk of a window is already imported (as the old importer left it): importing the
    window's other chunks adds their messages and removes none."""
    rng = random.Random(2)
    ms = random_messages(rng, 1, 300)
    history = MemberHistory(tmp_path / "history.sqlite")
    node, state = member(tmp_path, history)
    folder = build_folder(node.paths.archive_dir / COMMUNITY, ms, cap=5_000, weeks=1)
    ordered = [a for a, _ in folder.ordered()]
    last = ordered[-1]
    reference_hydrator(history)(COMMUNITY, folder.path, {last: folder.entries[last]})
    state.mark_archive(COMMUNITY, last, imported=True)
    node.import_archives(folder.entries, ordered[:1])
    assert sorted(hashes(history)) == sorted(m.hash for m in ms)
    history.close()
    state.close()


def run_cli(*args, check=None):
    """`archivist ARGS` in a child of the fork server (forked.run_cli: core.cli.main in a process of its own, its
    exit code, stdout and stderr), not a new interpreter each time; the disk-full test starts `python -m core.cli`."""
    from tests.support import forked
    p = forked.run_cli(list(args))
    assert "Traceback" not in p.stderr, p.stderr
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


def test_archivist_import_command(tmp_path, fork_server):
    rng = random.Random(3)
    ms = random_messages(rng, 3, 400)
    folder = build_folder(tmp_path / COMMUNITY, ms, cap=6_000, weeks=3)
    db = tmp_path / "history.sqlite"
    out = json.loads(run_cli("import", folder.path, "--history", db, "--latest", "--json", check=0).stdout)
    newest = {a for a, e in folder.entries.items() if e.start == T0 + 2 * WEEK}
    assert set(out["imported_archive_ids"]) == newest and out["windows"] == 1
    out = json.loads(run_cli("import", folder.path, "--history", db, "--json", check=0).stdout)
    assert set(out["imported_archive_ids"]) == set(folder.entries) - newest and out["already_imported"] == len(newest)
    again = run_cli("import", folder.path, "--history", db, check=0).stdout
    assert again.startswith("imported 0 archives")                  # only what is missing: nothing
    h = MemberHistory(db)
    assert sorted(hashes(h)) == sorted(m.hash for m in ms) and h.count(COMMUNITY) == len(ms)
    h.close()


def test_archivist_import_refuses_bad_input_and_names_bad_archives(tmp_path, fork_server):
    rng = random.Random(4)
    ms = random_messages(rng, 2, 200)
    folder = build_folder(tmp_path / COMMUNITY, ms, cap=10_000, weeks=2)
    db = tmp_path / "history.sqlite"
    assert "not a downloaded archive folder" in run_cli("import", tmp_path / "nope", "--history", db,
                                                        "--community-id", COMMUNITY, check=2).stderr
    assert "community ID" in run_cli("import", tmp_path, "--history", db, check=2).stderr
    assert "--from/--to" in run_cli("import", folder.path, "--history", db, "--latest", "--from", "1", "--to", "2",
                                    check=2).stderr
    # an index whose key is not the Keccak of its entry is not trusted: nothing imported
    good = folder.index_path.read_bytes()
    folder.index_path.write_bytes(good.replace(next(iter(folder.entries))[2:].encode(), b"f" * 64, 1))
    err = run_cli("import", folder.path, "--history", db, check=2).stderr
    assert "key-mismatch" in err and "nothing imported" in err
    # an index larger than any index is refused before it is read (core.archive.inspect.read_index, the bound of
    # every reader of an index: inspect, verify, the engine, the member, import, export, hydrate)
    with open(folder.index_path, "r+b") as f:
        f.truncate(64 * 1024 * 1024 + 1)
    err = run_cli("import", folder.path, "--history", db, check=2).stderr
    assert "is 67108865 bytes, over the 67108864-byte limit" in err and "Traceback" not in err
    folder.index_path.write_bytes(good)
    # a damaged archive is named; the other window still imports
    first_id, first = folder.ordered()[0]
    with open(folder.data_path, "r+b") as f:
        f.seek(first.offset)
        f.write(b"\xff" * 8)
    p = run_cli("import", folder.path, "--history", db, "--json", check=1)
    out = json.loads(p.stdout)
    assert first_id in out["failed"] and out["windows"] == 1
    h = MemberHistory(db)
    assert sorted(hashes(h)) == sorted(m.hash for m in ms if m.timestamp >= T0 + WEEK)
    h.close()


def test_archivist_import_encrypted_folder(tmp_path, fork_server):
    from core.archive.build import build_archives
    from core.status.archive_encryption import GroupKeyStore, HashRatchetEncryptor, index_codec, parse_cli_key
    from tests.integration.pipeline.helpers import COMMUNITY as CID, TOPICS, msg, write_store
    ms = [msg(T0 + i * 900, bytes([i % 256]) * 200, TOPICS[i % 2]) for i in range(150)]
    store = GroupKeyStore()
    key = parse_cli_key("cd" * 32, CID)
    store.add(key)
    build_archives(write_store(tmp_path / "db.sqlite", ms), CID, TOPICS, tmp_path / "d", tmp_path / "t",
                   end=T0 + 2 * WEEK, transform=HashRatchetEncryptor(store, key.group_id),
                   index_codec=index_codec(store, key.group_id))
    folder, db = tmp_path / "d" / CID, tmp_path / "h.sqlite"
    assert "--key" in run_cli("import", folder, "--history", db, check=2).stderr
    out = json.loads(run_cli("import", folder, "--history", db, "--key", "cd" * 32, "--json", check=0).stdout)
    assert out["messages"] == 150


# -- kill -9 ------------------------------------------------------------------------------------------------------

def child(folder, db, op, kill_at=None) -> int:
    """import_child.py's import in a child forked from the fork server (forked.py: the modules are loaded once,
    not in each of the 50 children); returns its exit code (-SIGKILL when it killed itself)."""
    from tests.support import forked
    argv = [str(folder), str(db), *map(str, op)]
    if kill_at is not None:
        argv += ["--kill-at", str(kill_at)]
    p = forked.start(forked.import_child_main, argv)
    p.join(120)
    if p.exitcode is None:
        p.kill()
        p.join()
        raise AssertionError("the import child did not end within 120 s")
    return p.exitcode


def random_op(rng: random.Random, weeks: int) -> tuple:
    kind = rng.choice(["latest", "range", "all", "range"])
    if kind != "range":
        return (kind,)
    lo = T0 + rng.randrange(weeks * WEEK)
    return ("range", lo, lo + rng.randrange(1, 2 * WEEK))


def chosen_hashes(folder, ms, op) -> set[bytes]:
    index = decode_index(folder.index_path.read_bytes())
    sel = Selection("range", op[1], op[2]) if op[0] == "range" else Selection(op[0])
    windows = {(index[a].start, index[a].end) for a in sel.choose(index)}
    return {m.hash for m in ms if any(lo <= m.timestamp < hi for lo, hi in windows)}


def test_kill9_during_imports_loses_and_duplicates_nothing(tmp_path, fork_server):
    """Random message sets, chunk sizes and sequences of latest / range / all imports; each import is first run
    in a child that SIGKILLs itself at a random row inside a window's transaction, then run again to the end.
    After every completed import the history holds at least the chosen windows' messages and nothing else; at the
    end exactly the source messages, no fewer and no duplicates."""
    seed = 14
    rng = random.Random(seed)
    kills = trials = 0
    while kills < 50:
        trials += 1
        weeks = rng.randrange(1, 5)
        ms = random_messages(rng, weeks, rng.randrange(20, 250))
        folder = build_folder(tmp_path / f"t{trials}" / COMMUNITY, ms, cap=rng.randrange(800, 12_000), weeks=weeks)
        db = tmp_path / f"t{trials}" / "history.sqlite"
        expected: set[bytes] = set()
        for op in [random_op(rng, weeks) for _ in range(rng.randrange(1, 4))] + [("all",)]:
            wanted = chosen_hashes(folder, ms, op)
            if wanted - expected:       # killed inside a transaction: the child would write len(wanted - expected)
                killed = child(folder.path, db, op, kill_at=rng.randrange(len(wanted - expected)))
                assert killed == -signal.SIGKILL, f"exit code {killed} (the child's traceback is on stderr)"
                kills += 1
            sel = Selection("range", op[1], op[2]) if op[0] == "range" else Selection(op[0])
            rep = import_folder(folder.path, db, COMMUNITY, sel)          # the restart finishes the job
            assert not rep.failed
            expected |= wanted
            h = MemberHistory(db)
            got = hashes(h)
            h.close()
            assert len(got) == len(set(got)), f"trial {trials} {op}: duplicated rows"
            assert set(got) == expected, f"trial {trials} {op}: {len(expected - set(got))} lost, " \
                                         f"{len(set(got) - expected)} unexpected"
        assert expected == {m.hash for m in ms}
    print(f"kill -9 trials: {trials} message sets, {kills} imports killed mid-transaction (seed {seed})")


def test_disk_full_during_import_stops_cleanly_and_a_rerun_continues(tmp_path, fork_server):
    """A real write failure (RLIMIT_FSIZE: the kernel refuses to grow the file, as on a full disk) in the middle of
    an import: one clear line, exit 2, whole windows only, and the next run imports the rest."""
    import resource
    rng = random.Random(5)
    ms = random_messages(rng, 4, 1200)
    folder = build_folder(tmp_path / COMMUNITY, ms, cap=20_000, weeks=4)
    db = tmp_path / "history.sqlite"
    MemberHistory(db).close()                       # the schema exists; the rows do not fit

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (db.stat().st_size + 150_000,) * 2)
    p = subprocess.run([sys.executable, "-m", "core.cli", "import", str(folder.path), "--history", str(db)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "cannot write" in p.stderr and "import again" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    h = MemberHistory(db)
    got = set(hashes(h))
    imported = h.imported_archive_ids(COMMUNITY)
    h.close()
    windows = {(folder.entries[a].start, folder.entries[a].end) for a in imported}
    assert got == {m.hash for m in ms if any(lo <= m.timestamp < hi for lo, hi in windows)}   # whole windows
    assert len(windows) < 4
    run_cli("import", folder.path, "--history", db, check=0)
    h = MemberHistory(db)
    assert sorted(hashes(h)) == sorted(m.hash for m in ms)
    h.close()


def test_member_node_backs_off_when_the_history_cannot_be_written(tmp_path):
    from core.storage.history import HistoryWriteError
    rng = random.Random(6)
    ms = random_messages(rng, 2, 100)
    history = MemberHistory(tmp_path / "history.sqlite")
    node, state = member(tmp_path, history)
    folder = build_folder(node.paths.archive_dir / COMMUNITY, ms, cap=5_000, weeks=2)
    errors = []
    node.bus.subscribe(lambda ev: errors.append(ev) if ev.name == E.ERROR else None)
    real = node.hydrator

    def full_disk(cid, path, chosen):
        raise HistoryWriteError("cannot write history.sqlite: database or disk is full (SQLITE_FULL)")

    class Job:
        entries, chosen = folder.entries, list(folder.entries)

        def snapshot(self):
            return {"state": "complete"}
    state.set_pending_link(COMMUNITY, "magnet:?xt=urn:btih:" + "0" * 40, 1, node.clock.now())
    node.hydrator = full_disk
    node._finished(Job())
    assert state.pending_link(COMMUNITY) is not None                  # the link is kept
    assert node.deadline == node.clock.now() + 30 and "retrying in 30 s" in node.waiting_reason
    assert errors and errors[-1].data["code"] == "history-write-failed"
    assert state.archive_ids(COMMUNITY, imported=True) == set()
    node.hydrator = real
    node._finished(Job())
    assert sorted(hashes(history)) == sorted(m.hash for m in ms) and state.pending_link(COMMUNITY) is None
    history.close()
    state.close()
