"""The Spark build's driver hashes the archives already in `data` on a thread while the executors encode
(core.pipeline.build.OldPieces): the hashes of that prefix, b"" for an empty folder, None (finish_build then reads
`data` itself) when it could not, or was stopped. No JVM."""
from __future__ import annotations

import os
import threading

from core.archive.constants import PIECE_LENGTH
from core.archive.torrent import piece_hashes
from core.pipeline.build import OldPieces


def test_old_pieces_are_the_prefix_hashes(tmp_path):
    data = tmp_path / "data"
    raw = os.urandom(3 * PIECE_LENGTH)
    data.write_bytes(raw + os.urandom(PIECE_LENGTH))   # bytes after the prefix (a later append) are not hashed
    assert OldPieces(data, 3 * PIECE_LENGTH).result() == piece_hashes([raw])
    assert OldPieces(data, 0).result() == b""
    assert OldPieces(tmp_path / "missing", PIECE_LENGTH).result() is None
    assert OldPieces(data, 9 * PIECE_LENGTH).result() is None   # shorter than the index says


def test_a_stopped_hash_gives_none(tmp_path):
    """stop() ends the thread at its next block (a cancelled build); a FIFO holds it inside its first read."""
    fifo = tmp_path / "data"
    os.mkfifo(fifo)
    old = OldPieces(fifo, PIECE_LENGTH)   # without the stop, the piece written below would hash fine
    opened = threading.Event()

    def feed():
        with open(fifo, "wb") as f:   # blocks until the thread opens the FIFO for reading
            opened.set()
            old.stop()
            try:
                f.write(bytes(PIECE_LENGTH))   # all it asked for: the thread sees the stop after its first read
            except BrokenPipeError:
                pass
    t = threading.Thread(target=feed)
    t.start()
    assert opened.wait(60)
    assert old.result() is None
    t.join(60)
