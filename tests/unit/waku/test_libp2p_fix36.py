"""Fix 36 (core/waku/libp2p_patches/quietlog.py): the receive side's debug lines (f-strings) are built only when
debug logging is on, and with it on the same lines are logged. Real py-libp2p Yamux over an in-memory trio stream
pair (the test plays the other side with raw frames) whose peer ID counts how often it is formatted: only the debug
lines format it on this path."""
import logging
import struct

import pytest
import trio
import trio.testing
from libp2p.io.trio import TrioTCPStream
from libp2p.network.stream.net_stream import NetStream
from libp2p.security.noise.io import BaseNoiseMsgReadWriter
from libp2p.stream_muxer.yamux import yamux as Y

from core.waku.libp2p_patches import quietlog


class _CountedID:
    """A peer ID that counts its formatting (f-strings call __format__)."""
    formatted = 0

    def __format__(self, spec):
        _CountedID.formatted += 1
        return "16Uiu2counted"

    __str__ = __repr__ = lambda self: format(self)


def frame(typ: int, flags: int, sid: int, body: bytes = b"", length: int | None = None) -> bytes:
    return struct.pack(Y.YAMUX_HEADER_FORMAT, 0, typ, flags, sid, len(body) if length is None else length) + body


class _Secured(TrioTCPStream):
    is_initiator = False


async def _exchange() -> bytes:
    """The peer opens a stream, sends a request with FIN; we accept, read it, answer and close (the per-request
    path; start()'s debug lines, once per connection, are left as upstream wrote them)."""
    ours, theirs = trio.testing.memory_stream_pair()
    mux = Y.Yamux(_Secured(ours), _CountedID(), is_initiator=False)
    async with trio.open_nursery() as n:
        n.start_soon(mux.start)
        await mux.event_started.wait()
        _CountedID.formatted = 0            # start()'s lines are once per connection: counted from here on
        with trio.fail_after(10):
            await theirs.send_all(frame(Y.TYPE_WINDOW_UPDATE, Y.FLAG_SYN, 1, length=0)
                                  + frame(Y.TYPE_DATA, Y.FLAG_FIN, 1, b"request"))
            stream = await mux.accept_stream()
            got = await stream.read(100)
            await stream.write(b"answer")
            await stream.close()
        n.cancel_scope.cancel()
    return got


def _run(monkeypatch, level: int, functions=None) -> int:
    """How often the peer ID was formatted in one exchange at `level`; `functions` = {(class, name): function}."""
    for (cls, name), fn in (functions or {}).items():
        monkeypatch.setattr(cls, name, fn)
    monkeypatch.setattr(_CountedID, "formatted", 0)
    before = Y.logger.level
    Y.logger.setLevel(level)            # setLevel, not the attribute: it clears isEnabledFor's cache
    try:
        assert trio.run(_exchange) == b"request"
    finally:
        Y.logger.setLevel(before)
    return _CountedID.formatted


def test_fix36_upstream_formats_the_receive_side_debug_lines_with_debug_off(monkeypatch):
    """Fails once py-libp2p builds these lines only when debug logging is on: then drop fix 36."""
    assert _run(monkeypatch, logging.INFO, quietlog.UPSTREAM) >= 5


def test_fix36_no_debug_line_is_built_with_debug_off_and_the_same_are_logged_with_it_on(monkeypatch, caplog):
    assert quietlog.installed()
    assert _run(monkeypatch, logging.INFO) == 0
    caplog.set_level(logging.DEBUG, logger=Y.logger.name)
    ours = _run(monkeypatch, logging.DEBUG)
    lines = [r.getMessage() for r in caplog.records if r.name == Y.logger.name]
    caplog.clear()
    upstream = _run(monkeypatch, logging.DEBUG, quietlog.UPSTREAM)
    assert ours > 0 and upstream > 0

    def steady(msgs):   # whether the reader got there before the data (and so waited) is the scheduler's choice
        return {m for m in msgs if "Waiting for data" not in m and "recv_closed=False, reset" not in m}
    assert steady(lines) == steady(r.getMessage() for r in caplog.records if r.name == Y.logger.name)
    assert any("YAMUX RX: type=DATA flags=FIN stream=1 length=7" in line for line in lines)   # the guarded dict


class _Counted(bytes):
    lens = 0

    def __len__(self):
        _Counted.lens += 1
        return super().__len__()


class _Plain(BaseNoiseMsgReadWriter):
    """Noise's transport reader minus the cipher: what it reads is returned as is."""

    def __init__(self, data: bytes):
        self.read_writer, self.prefix, self._data = self, b"", data

    async def read_msg(self) -> bytes:   # the packet reader's read_msg (self.read_writer is self)
        return self._data

    def encrypt(self, data):
        return data

    def decrypt(self, data):
        return bytes(data)


@pytest.mark.parametrize("level, built", [(logging.INFO, 0), (logging.DEBUG, 1)])
def test_fix36_noise_read_msg_builds_its_lines_only_with_debug_on(monkeypatch, level, built):
    from libp2p.security.noise import io as noise_io
    monkeypatch.setattr(_Counted, "lens", 0)
    reader = _Plain(_Counted(b"payload"))
    before = noise_io.logger.level
    noise_io.logger.setLevel(level)
    try:
        assert trio.run(BaseNoiseMsgReadWriter.read_msg, reader) == b"payload"
    finally:
        noise_io.logger.setLevel(before)
    assert _Counted.lens == built          # the debug line's len(): the decrypt gets the bytes without it


def test_fix36_netstream_set_state_builds_its_line_only_with_debug_on():
    class State:
        names = 0

        @property
        def name(self):
            State.names += 1
            return "X"

    class Stream:
        _state_lock = trio.Lock()
        _state = State()
        logger = logging.getLogger("test.fix36")

    async def set_both():
        s = Stream()
        s._state_lock = trio.Lock()
        Stream.logger.setLevel(logging.INFO)
        await NetStream.set_state(s, State())
        off = State.names
        Stream.logger.setLevel(logging.DEBUG)
        await NetStream.set_state(s, State())
        return off, State.names - off
    assert trio.run(set_both) == (0, 2)


# --- fix 37 (yamux.py): a DATA frame's body already decrypted is read without a timeout scope ---
class _Messages:
    """A Noise transport reader in the clear: read_msg returns the next message."""

    def __init__(self, *msgs: bytes):
        self.msgs = list(msgs)

    async def read_msg(self) -> bytes:
        return self.msgs.pop(0) if self.msgs else b""


def _session(*msgs: bytes):
    from libp2p.crypto.secp256k1 import create_new_key_pair
    from libp2p.peer.id import ID
    from libp2p.security.secure_session import SecureSession
    kp = create_new_key_pair()
    return SecureSession(local_peer=ID.from_pubkey(kp.public_key), local_private_key=kp.private_key,
                         remote_peer=ID.from_pubkey(kp.public_key), remote_permanent_pubkey=kp.public_key,
                         is_initiator=False, conn=_Messages(*msgs))


def _body_reads(monkeypatch, read_body, *msgs: bytes) -> tuple[list, int]:
    """(header, body) read as handle_incoming does (12 bytes, then the body) over messages `msgs`, and how many
    timeout scopes (trio.fail_after) the body's read entered."""
    from types import SimpleNamespace
    scopes, upstream = [], trio.fail_after
    monkeypatch.setattr(trio, "fail_after", lambda s: scopes.append(s) or upstream(s))
    conn = SimpleNamespace(secured_conn=_session(*msgs))

    async def main():
        header = await conn.secured_conn.read(12)
        return [header, await read_body(conn, 5)]
    return trio.run(main), len(scopes)


def test_fix37_upstream_enters_a_timeout_scope_for_a_buffered_body(monkeypatch):
    """Fails once py-libp2p reads a buffered DATA body without a cancel scope: then drop fix 37."""
    from core.waku.libp2p_patches import yamux
    assert _body_reads(monkeypatch, yamux.UPSTREAM_READ_DATA_BODY, b"h" * 12 + b"body!") == ([b"h" * 12, b"body!"], 1)


def test_fix37_a_buffered_body_is_read_without_a_scope_and_any_other_as_upstream(monkeypatch):
    from core.waku.libp2p_patches import yamux
    assert Y.Yamux._read_data_body is yamux.read_data_body
    assert _body_reads(monkeypatch, yamux.read_data_body, b"h" * 12 + b"body!tail") == ([b"h" * 12, b"body!"], 0)
    # the body split over two Noise messages: upstream's read, with its timeout
    assert _body_reads(monkeypatch, yamux.read_data_body, b"h" * 12 + b"bo", b"dy!") == ([b"h" * 12, b"body!"], 1)
    assert _body_reads(monkeypatch, yamux.read_data_body, b"h" * 12, b"body!") == ([b"h" * 12, b"body!"], 1)
