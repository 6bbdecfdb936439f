"""Fix 27 (core/waku/libp2p_patches/yamux.py): yamux frames are written without building a debug line unless
debug logging is on."""
import logging
import struct

import trio
import trio.testing
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches import yamux
from core.waku.libp2p_patches.locks import UncontendedLock


class _Flag(int):
    """FLAG_SYN that counts how often a frame's flags are tested against it (only the debug line does)."""
    tests = 0

    def __rand__(self, other):
        _Flag.tests += 1
        return int(other) & int(self)


class _FakeYamux:
    def __init__(self):
        self._write_lock = trio.Lock()
        self.is_initiator_value = True
        self.written = []
        self.secured_conn = self

    async def write(self, data):
        self.written.append(data)


def _write_frames(write, monkeypatch, level) -> tuple[int, list]:
    monkeypatch.setattr(Y, "FLAG_SYN", _Flag(Y.FLAG_SYN))
    monkeypatch.setattr(_Flag, "tests", 0)
    frame = struct.pack(Y.YAMUX_HEADER_FORMAT, 0, Y.TYPE_DATA, 0, 1, 3) + b"abc"
    fake = _FakeYamux()

    async def main():
        for _ in range(10):
            await write(fake, frame)
    before = Y.logger.level
    Y.logger.setLevel(level)            # setLevel, not the attribute: it clears isEnabledFor's cache
    try:
        trio.run(main)
    finally:
        Y.logger.setLevel(before)
    return _Flag.tests, fake.written


def test_fix27_upstream_formats_a_debug_line_per_frame_with_debug_off(monkeypatch):
    """Fails once py-libp2p builds the line only when debug logging is on: then drop fix 27."""
    tests, written = _write_frames(yamux.UPSTREAM_WRITE_FRAME, monkeypatch, logging.INFO)
    assert tests == 10 and len(written) == 10


def test_fix27_frames_written_without_the_line_unless_debug_is_on(monkeypatch):
    assert Y.Yamux._write_frame is yamux.lean_write_frame
    frame_tests, written = _write_frames(yamux.lean_write_frame, monkeypatch, logging.INFO)
    assert frame_tests == 0 and written == [written[0]] * 10 and written[0].endswith(b"abc")

    async def one_frame():
        fake = _FakeYamux()
        fake._write_lock = UncontendedLock()          # fix 20's, as every yamux connection of ours
        with trio.testing.assert_no_checkpoints():   # fix 29: the send's own is the only one (test_libp2p_fix30)
            await yamux.lean_write_frame(fake, b"x" * 12)
    trio.run(one_frame)
    frame_tests, written = _write_frames(yamux.lean_write_frame, monkeypatch, logging.DEBUG)
    assert frame_tests == 10 and len(written) == 10             # debug on: upstream's write, with its line
