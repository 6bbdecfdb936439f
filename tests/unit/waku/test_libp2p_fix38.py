"""Fix 38 (core/waku/libp2p_patches/dialing.py): Swarm.dial_peer returns with the first connection up, starts no
other address once one has connected, and still hands over to the next address at once when one fails.

Real py-libp2p hosts (Noise, yamux) on 127.0.0.1, TCP and WebSocket, port 0, on trio's MockClock left still
(autojump off): virtual time moves only when a test jumps it, so upstream's 250 ms head start
(`_HAPPY_EYEBALLS_DELAY`) is seen exactly and nothing depends on the machine's load. Every address the dialler
tries is recorded by a spy around its own `_dial_with_retry` (the real dial runs)."""
import functools
import socket

import multiaddr
import trio
import trio.testing
from libp2p import new_host
from libp2p.crypto.secp256k1 import create_new_key_pair
from libp2p.network import swarm as swarm_module
from libp2p.network.config import RetryConfig
from libp2p.peer.id import ID
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux

from core.waku.libp2p_patches import dialing
from core.waku.libp2p_patches.host import disable_auto_connector, noise_only_security

HEAD_START = swarm_module._HAPPY_EYEBALLS_DELAY
TCP0, WS0 = multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0"), multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0/ws")


def _host():
    """A host with TCP and WebSocket transports (new_host picks them from its listen addresses)."""
    kp = create_new_key_pair()
    host = new_host(key_pair=kp, sec_opt=noise_only_security(kp), muxer_opt={YAMUX: Yamux},
                    listen_addrs=[TCP0, WS0])
    disable_auto_connector(host)
    return host


def _addr_of(host, ws: bool) -> multiaddr.Multiaddr:
    """The host's live TCP (or WebSocket) address, without /p2p/."""
    for a in host.get_addrs():
        text = str(a).split("/p2p/")[0]
        if text.endswith("/ws") == ws and "/tcp/0" not in text:
            return multiaddr.Multiaddr(text)
    raise AssertionError(f"no {'ws' if ws else 'tcp'} address in {host.get_addrs()}")


class _Refusing:
    """A port bound but not listening: a connect to it is refused at once (kept bound so nobody else takes it)."""

    def __enter__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


class _Dial:
    """dial_peer (ours, or upstream's when `upstream`) of `peer_id` with `addrs` in the peerstore, run in a task:
    `dialled` lists the addresses tried in order, `tried` how each ended, `up` is set when the first connection is
    up (`up2` the second), `done` when dial_peer has returned (`result`) or raised (`error`)."""

    def __init__(self, swarm, peer_id: ID, addrs, upstream: bool = False):
        self.swarm, self.peer_id, self.upstream = swarm, peer_id, upstream
        self.dialled: list[str] = []                  # addresses (without /p2p/) as their dials start
        self.tried: list[tuple[str, bool]] = []       # ... as they end: (address, connected)
        self._ups, self.done = [trio.Event(), trio.Event()], trio.Event()
        self.up, self.up2 = self._ups
        self.result, self.error = None, None
        swarm.peerstore.add_addrs(peer_id, addrs, 120)
        real = swarm._dial_with_retry

        async def spy(addr, peer, source=None):
            text = str(addr).split("/p2p/")[0]
            self.dialled.append(text)
            try:
                conn = await real(addr, peer, source)
            except BaseException:
                self.tried.append((text, False))
                raise
            self.tried.append((text, True))
            self._ups[sum(ok for _, ok in self.tried) - 1].set()
            return conn
        swarm._dial_with_retry = spy

    async def run(self):
        dial_peer = dialing.UPSTREAM_DIAL_PEER if self.upstream else type(self.swarm).dial_peer
        try:
            self.result = await dial_peer(self.swarm, self.peer_id)
        except Exception as e:  # noqa: BLE001 - compared with upstream's
            self.error = e
        finally:
            self.done.set()


async def _with_hosts(body, *, server: bool = True, retries: int | None = None):
    """`body(clock, dialler, server)` with both hosts running (server None when not wanted)."""
    dialler = _host()
    if retries is not None:
        dialler.get_network().retry_config = RetryConfig(max_retries=retries)
    async with dialler.run([TCP0, WS0]):
        if not server:
            return await body(dialler, None)
        srv = _host()
        async with srv.run([TCP0, WS0]):
            return await body(dialler, srv)


def _run(body, **kw):
    # still: time moves only when the test jumps it, or after 5 s (real) with every task waiting (a dial that
    # waits on the clock where it should not: the test then fails on its clock check instead of hanging)
    clock = trio.testing.MockClock(autojump_threshold=5.0)
    return trio.run(lambda: _with_hosts(lambda d, s: body(clock, d, s), **kw), clock=clock)


def test_fix38_installed():
    assert dialing.installed()
    assert swarm_module.Swarm.dial_peer is not dialing.UPSTREAM_DIAL_PEER


async def _plain_dial_peer(self, peer_id):
    """A dial_peer without upstream's happy-eyeballs loop (as an upstream change might leave it)."""
    return []


def test_fix38_an_upstream_of_another_shape_is_kept_with_a_warning(monkeypatch, caplog):
    ns: dict = {}
    exec("async def dial_peer(self, peer_id):\n    return []\n", ns)   # noqa: S102 - a function without source
    for upstream, why in ((_plain_dial_peer, "expected 1"), (ns["dial_peer"], "source")):
        caplog.clear()
        monkeypatch.setattr(dialing, "UPSTREAM_DIAL_PEER", upstream)
        monkeypatch.setattr(swarm_module.Swarm, "dial_peer", upstream)
        dialing.install_quick_dial()
        assert swarm_module.Swarm.dial_peer is upstream and not dialing.installed()
        [record] = [r for r in caplog.records if r.name == dialing.__name__]
        assert record.levelname == "WARNING" and "fix 38 not applied" in record.getMessage()
        assert why in record.getMessage()


def test_fix38_upstream_returns_only_after_the_head_start():
    """Fails once py-libp2p's dial_peer returns when its address has connected: then drop fix 38."""
    async def body(clock, dialler, server):
        d = _Dial(dialler.get_network(), server.get_id(), [_addr_of(server, ws=False)], upstream=True)
        async with trio.open_nursery() as n:
            n.start_soon(d.run)
            await d.up.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert not d.done.is_set()                      # connected, and still waiting out the head start
            clock.jump(HEAD_START * 0.9)
            await trio.testing.wait_all_tasks_blocked()
            assert not d.done.is_set()
            clock.jump(HEAD_START * 0.2)
            await trio.testing.wait_all_tasks_blocked()
            assert d.done.is_set() and d.error is None and len(d.result) == 1
    _run(body)


def test_fix38_upstream_dials_the_second_address_of_a_peer_it_has_connected_to():
    async def body(clock, dialler, server):
        tcp, ws = _addr_of(server, ws=False), _addr_of(server, ws=True)
        d = _Dial(dialler.get_network(), server.get_id(), [tcp, ws], upstream=True)
        async with trio.open_nursery() as n:
            n.start_soon(d.run)
            await d.up.wait()
            clock.jump(HEAD_START)                        # the head start is over: the WebSocket address is dialled
            await d.up2.wait()
            clock.jump(HEAD_START)                        # and given its head start too
            await trio.testing.wait_all_tasks_blocked()
            assert d.done.is_set()
        assert d.dialled == [str(tcp), str(ws)]
        assert len(d.result) == 2 and len(dialler.get_network().get_connections(server.get_id())) == 2
    _run(body)


def test_fix38_one_address_one_connection_returned_as_soon_as_it_is_up():
    async def body(clock, dialler, server):
        start = clock.current_time()
        d = _Dial(dialler.get_network(), server.get_id(), [_addr_of(server, ws=False)])
        async with trio.open_nursery() as n:
            n.start_soon(d.run)
            await d.up.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert d.done.is_set(), "dial_peer still waiting after its connection was up"
        assert clock.current_time() == start and d.error is None
        assert len(d.result) == 1 and dialler.get_network().get_connections(server.get_id()) == d.result
    _run(body)


def test_fix38_the_second_address_is_never_dialled_once_the_first_has_connected():
    async def body(clock, dialler, server):
        tcp, ws = _addr_of(server, ws=False), _addr_of(server, ws=True)
        swarm = dialler.get_network()
        d = _Dial(swarm, server.get_id(), [ws, tcp])      # TCP is ranked first whatever the order
        async with trio.open_nursery() as n:
            n.start_soon(d.run)
            await d.up.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert d.done.is_set()
        clock.jump(10 * HEAD_START)                       # long past any head start: nothing else is started
        await trio.testing.wait_all_tasks_blocked()
        assert d.dialled == [str(tcp)]
        assert len(d.result) == 1 and swarm.get_connections(server.get_id()) == d.result
        assert len(server.get_network().get_connections(dialler.get_id())) == 1
    _run(body)


def test_fix38_a_slow_first_address_is_cancelled_once_the_second_has_connected():
    """The TCP address accepts and never answers (a Noise handshake that hangs): after its head start the WebSocket
    address is dialled, connects, and the dial returns with it at once, the TCP dial cancelled and its socket
    closed (upstream's nursery would wait for that handshake's own timeout)."""
    async def body(clock, dialler, server):
        closed = trio.Event()

        async def silent(stream):
            while await stream.receive_some(65536):
                pass
            closed.set()
        async with trio.open_nursery() as n:
            [listener] = await n.start(functools.partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
            slow = multiaddr.Multiaddr(f"/ip4/127.0.0.1/tcp/{listener.socket.getsockname()[1]}")
            ws = _addr_of(server, ws=True)
            d = _Dial(dialler.get_network(), server.get_id(), [slow, ws])
            n.start_soon(d.run)
            await trio.testing.wait_all_tasks_blocked()
            assert d.dialled == [str(slow)] and not d.done.is_set()
            clock.jump(HEAD_START)
            await d.up.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert d.done.is_set() and clock.current_time() == HEAD_START
            assert d.tried == [(str(ws), True), (str(slow), False)]
            assert d.error is None and dialler.get_network().get_connections(server.get_id()) == d.result
            await closed.wait()
            n.cancel_scope.cancel()
    _run(body)


def test_fix38_a_refused_first_address_hands_over_to_the_second_at_once():
    async def body(clock, dialler, server):
        with _Refusing() as port:
            refused, ws = multiaddr.Multiaddr(f"/ip4/127.0.0.1/tcp/{port}"), _addr_of(server, ws=True)
            d = _Dial(dialler.get_network(), server.get_id(), [refused, ws])
            await d.run()
        assert clock.current_time() == 0                  # no head start waited out
        assert d.tried == [(str(refused), False), (str(ws), True)]
        assert d.error is None and len(d.result) == 1
        assert dialler.get_network().get_connections(server.get_id()) == d.result
    _run(body, retries=0)


PEER = ID.from_pubkey(create_new_key_pair().public_key)


def _all_refused(upstream: bool) -> _Dial:
    async def body(clock, dialler, _):
        with _Refusing() as p1, _Refusing() as p2:
            addrs = [multiaddr.Multiaddr(f"/ip4/127.0.0.1/tcp/{p1}"),
                     multiaddr.Multiaddr(f"/ip4/127.0.0.1/tcp/{p2}/ws")]
            d = _Dial(dialler.get_network(), PEER, addrs, upstream=upstream)
            await d.run()
        return d
    return _run(body, server=False, retries=0)


def test_fix38_all_refused_raises_what_upstream_raises():
    ours, theirs = _all_refused(False), _all_refused(True)
    assert isinstance(theirs.error, swarm_module.SwarmException) and ours.result is None
    assert type(ours.error) is type(theirs.error) and str(ours.error) == str(theirs.error)
    assert ours.error.num_addrs_tried == theirs.error.num_addrs_tried == 2
    assert type(ours.error.__cause__) is type(theirs.error.__cause__)
    kinds = [(a.endswith("/ws"), ok) for a, ok in ours.tried]
    assert kinds == [(a.endswith("/ws"), ok) for a, ok in theirs.tried] == [(False, False), (True, False)]
