"""Fix 19 (registry: __init__.py): one round trip less per request stream.

py-libp2p 0.8.1's client side of multistream-select (host/basic_host.py BasicHost.new_stream ->
protocol_muxer/multiselect_client.py MultiselectClient.select_one_of) sends its header, waits for the server's,
then sends the protocol and waits for its echo: two round trips and four frames (each a Noise message and a
socket send) before a store or lightpush request can go out. Every request of ours opens a fresh stream, so
under a flood that wait and those frames are a large share of a request's cost on both sides.

`open_stream` sends the header and the protocol in one write (the pipelined, "lazy" form go-libp2p and
js-libp2p use; a server reads them in order either way) and then reads the two answers. Our request/response
clients put the request in that same write too (`first`): one frame (a yamux frame, a Noise message, a socket
send) per request on each side instead of two. A reset while reading the answers to such a pipelined request is
raised as is ("closed": the peer took the request and reset the exchange), as when it came after the request. A server that does not
serve the protocol answers "na": that is a StreamFailure caused by a MultiselectClientError, as upstream raises
(core/waku/errors.py maps it to "unsupported"). A stream reset or closed while negotiating is a StreamFailure
without it ("unreachable": the connection went away, e.g. the peer stopped), where upstream said "unsupported".
Fix 34 (yamux.py): when a connection to the peer is already open, the stream's SYN goes out in front of that first
write, in one Noise message.
"""
from __future__ import annotations

import contextlib

import trio
from libp2p.host.exceptions import StreamFailure
from libp2p.network.stream.exceptions import StreamError, StreamReset
from libp2p.protocol_muxer.exceptions import MultiselectClientError

from core.varint import DecodeError, write_varint
from core.waku.libp2p_patches.framing import read_length_prefixed
from core.waku.libp2p_patches.oneframe import write_and_close_write
from core.waku.libp2p_patches.yamux import hold_syn

MULTISTREAM = b"/multistream/1.0.0\n"
NEGOTIATE_TIMEOUT_S = 10.0   # as py-libp2p's default negotiate_timeout
_MAX_LINE = 1024


def _line(text: bytes) -> bytes:
    return write_varint(len(text)) + text


async def open_stream(host, peer_id, protocol: str, *, timeout_s: float = NEGOTIATE_TIMEOUT_S, first: bytes = b"",
                      close_write: bool = False):
    """A new stream to `peer_id` speaking `protocol`, negotiated in one round trip. `first`: the request, sent in
    the same write (a server that refuses the protocol answers "na" and never reads it as a request).
    `close_write`: `first` is the whole request, and the same frame carries our FIN when it fits one frame
    (oneframe.write_and_close_write); the stream stays readable for the answer."""
    network = host.get_network()
    if network.get_connections(peer_id):    # fix 34: the SYN goes with the first write (no dial, no other stream)
        with hold_syn():
            stream = await network.new_stream(peer_id)
    else:
        stream = await network.new_stream(peer_id)
    proposal = protocol.encode() + b"\n"
    try:
        with trio.fail_after(timeout_s):
            try:
                opening = _line(MULTISTREAM) + _line(proposal) + first
                if not (close_write and await write_and_close_write(stream, opening)):
                    await stream.write(opening)
                for want in (MULTISTREAM, proposal):
                    got = await read_length_prefixed(stream, _MAX_LINE)
                    if got != want:
                        raise MultiselectClientError(f"{protocol} refused: the peer answered {got[:64]!r}")
            except StreamError as e:
                if first and isinstance(e, StreamReset):   # our request went out with the proposal: the peer
                    raise                                   # reset the exchange
                # reset or closed while negotiating: the connection is gone, not the protocol
                raise StreamFailure(f"Failed to create stream to peer {peer_id}: {e or type(e).__name__}") from e
            except DecodeError as e:   # an answer that is not multistream-select
                raise MultiselectClientError(f"{protocol}: {e or type(e).__name__}") from e
    except BaseException as e:
        with trio.CancelScope(shield=True), trio.move_on_after(2), contextlib.suppress(Exception):
            await stream.reset()
        if isinstance(e, MultiselectClientError):
            raise StreamFailure(f"failed to open a stream to peer {peer_id}: {e}") from e
        if isinstance(e, trio.TooSlowError):
            raise StreamFailure(f"failed to open a stream to peer {peer_id}") from MultiselectClientError(
                f"response timed out after {timeout_s:g}s, protocol {protocol}")
        raise
    stream.set_protocol(protocol)
    return stream
