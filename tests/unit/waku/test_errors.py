"""core/waku/errors.py: how network failures from py-libp2p and trio map onto WakuPeerError."""
import trio
from libp2p.host.exceptions import StreamFailure
from libp2p.network.exceptions import SwarmDialAllFailedError
from libp2p.network.stream.exceptions import StreamReset
from libp2p.protocol_muxer.exceptions import ProtocolNotSupportedError

from core.varint import DecodeError
from core.waku import errors
from core.waku.errors import WakuPeerError, peer_error


def _unsupported() -> StreamFailure:
    try:
        try:
            raise ProtocolNotSupportedError("protocol not supported")
        except ProtocolNotSupportedError as inner:
            raise StreamFailure("failed to open a stream to peer P") from inner
    except StreamFailure as e:
        return e


def test_each_network_failure_has_its_kind_and_keeps_the_cause():
    cases = [(trio.TooSlowError(), errors.TIMEOUT, "no answer within 2.5 s"),
             (SwarmDialAllFailedError("unable to connect"), errors.UNREACHABLE, "unable to connect"),
             (_unsupported(), errors.UNSUPPORTED, "does not serve the protocol"),
             (StreamFailure("failed to open a stream"), errors.UNREACHABLE, "failed to open a stream"),
             (StreamReset("reset by peer"), errors.CLOSED, "StreamReset: reset by peer"),
             (trio.BrokenResourceError(), errors.CLOSED, "BrokenResourceError"),
             (DecodeError("stream closed after 3 of 9 bytes"), errors.CLOSED, "stream closed after 3"),
             (DecodeError("malformed store v3 response: bad wire type"), errors.MALFORMED, "bad wire type"),
             (ValueError("Invalid MultiAddr '/ip4/1.2.3'"), errors.BAD_ADDRESS, "Invalid MultiAddr")]
    for exc, kind, text in cases:
        err = peer_error(exc, "16Uiu2peer", "store query", 2.5)
        assert isinstance(err, WakuPeerError) and err.kind == kind and text in err.reason, (exc, err)
        assert err.__cause__ is exc and str(err).startswith(f"store query to 16Uiu2peer: {kind}: ")


def test_bugs_and_cancellation_are_not_disguised_as_peer_errors():
    for exc in (KeyError("x"), TypeError("bad call"), KeyboardInterrupt()):
        assert peer_error(exc, "p", "dial") is exc


def test_an_exception_group_of_network_failures_becomes_one_peer_error():
    group = BaseExceptionGroup("dial", [SwarmDialAllFailedError("all failed"), StreamReset("gone")])
    err = peer_error(group, "p", "dial")
    assert isinstance(err, WakuPeerError) and err.kind == errors.UNREACHABLE and err.reason == "all failed"
    mixed = BaseExceptionGroup("dial", [SwarmDialAllFailedError("all failed"), TypeError("bug")])
    assert peer_error(mixed, "p", "dial") is mixed
