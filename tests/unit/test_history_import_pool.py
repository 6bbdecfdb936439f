"""The importer's worker processes (core.history_import.RowPool): real signed Status messages, real worker
processes. The rows must be exactly the in-process rows, in the same order, whatever happens to the workers."""
from __future__ import annotations

import hashlib
import os
import signal

import pytest
from coincurve import PrivateKey

from core.archive.codec import ArchiveMessage
from core.history_import import RowPool, rows_of_messages
from core.status.application_metadata import CHAT_MESSAGE, wrap_application, wrap_public
from core.status.chat_message import encode_chat_message
from core.status.unwrap import no_unwrap

CID = "0x02" + "ab" * 32
TOPIC = b"\x01\x02\x03\x04"
AUTHORS = [PrivateKey(hashlib.sha256(b"author %d" % i).digest()) for i in range(7)]


def messages(n: int) -> list[ArchiveMessage]:
    out = []
    for i in range(n):
        chat = encode_chat_message(f"message {i}", "chat-%d" % (i % 3), i + 1, 1_700_000_000_000 + i)
        payload = wrap_public(wrap_application(chat, CHAT_MESSAGE, AUTHORS[i % len(AUTHORS)]), "install")
        if i % 11 == 0:
            payload = b"not a status message %d" % i          # stored raw: the row keeps its place
        out.append(ArchiveMessage(b"", 1_700_000_000 + i, TOPIC, payload, hash=hashlib.sha256(b"%d" % i).digest()))
    return out


@pytest.fixture(scope="module")
def pool():
    p = RowPool(workers=2)
    p.MIN_MESSAGES, p.CHUNK = 50, 40          # small enough that a test-sized batch is spread over workers
    yield p
    p.shutdown()


def test_workers_give_the_in_process_rows_in_order(pool):
    ms = messages(230)
    got = pool.rows(CID, "aid", ms)
    assert pool._pool is not None and not pool.broken        # the workers did it
    want = rows_of_messages(CID, "aid", ms)
    assert got == want
    authors = {r[4] for r in want if r[5] is not None}
    assert authors == {a.public_key.format(compressed=False) for a in AUTHORS}          # signers recovered
    assert sum(1 for r in want if r[5] is None) == len(range(0, 230, 11))   # raw ones stay raw


def test_small_batches_and_other_unwrappers_stay_in_process():
    p = RowPool(workers=2)
    ms = messages(30)
    assert p.rows(CID, "a", ms) == rows_of_messages(CID, "a", ms)       # below MIN_MESSAGES
    p.MIN_MESSAGES = 1
    assert p.rows(CID, "a", ms, no_unwrap) == rows_of_messages(CID, "a", ms, no_unwrap)
    assert p._pool is None                                                # no worker was started for either
    assert RowPool(workers=1).workers == 1


def test_a_killed_worker_never_loses_the_batch(pool):
    ms = messages(120)
    assert pool.rows(CID, "a", ms) == rows_of_messages(CID, "a", ms)    # workers up
    for proc in list(pool._pool._processes.values()):
        os.kill(proc.pid, signal.SIGKILL)
    got = pool.rows(CID, "b", ms)                                       # the pool is broken: done here instead
    assert got == rows_of_messages(CID, "b", ms)
    assert pool.broken
    assert pool.rows(CID, "c", ms) == rows_of_messages(CID, "c", ms)    # and stays in process afterwards


def _rows_in_a_daemon(q):
    p = RowPool(workers=2)
    p.MIN_MESSAGES, p.CHUNK = 10, 10
    ms = messages(40)
    q.put((p.rows(CID, "d", ms) == rows_of_messages(CID, "d", ms), p._pool is None))


def test_in_a_daemonic_worker_process_the_rows_are_made_in_process():
    """The engine's own worker processes are daemonic (they may not have children): the pool stays off there."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_rows_in_a_daemon, args=(q,), daemon=True)
    proc.start()
    same, no_pool = q.get(timeout=120)
    proc.join(60)
    assert same and no_pool and proc.exitcode == 0
