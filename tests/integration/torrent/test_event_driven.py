"""The member's download is driven by events alone (issue 17): no libtorrent tick, no status poll, no fixed sleep
stands between two steps; and libtorrent's peer sockets run without Nagle's algorithm (core/torrent/nodelay.py)."""
from __future__ import annotations

import os
import socket
import threading

import pytest

from core.torrent import events as ev
from core.torrent.selection import Selection
from tests.integration.torrent.test_loopback_fetch import _check_partial

# libtorrent connects to new peers, recomputes rates and runs its timeouts once a second on its tick; a minute-long
# tick and an hour-long status period leave only events (alerts, commands) to move a download forward
NO_TICKS = dict(status_interval=3600.0, extra={"tick_interval": 60_000})
WAIT = 30


@pytest.mark.parametrize("mode", ["all", "latest"])
def test_a_fetch_needs_no_tick(services, community, tmp_path, mode):
    seeder = services("seeder", **NO_TICKS)
    seeder.seed(community.community_id, community.data_dir, community.raw)
    member = services("member", **NO_TICKS)
    job = member.fetch(community.magnet, tmp_path / "member", Selection(mode),
                       peers=[("127.0.0.1", seeder.listen_port)])
    assert job.wait(WAIT), job.snapshot()      # the given peer is connected at once, not on a later tick
    assert job.state == "complete", job.snapshot()
    if mode == "latest":
        entries = community.entries()
        _check_partial(community, tmp_path, job, [max(entries, key=lambda k: entries[k].end)])
    else:
        got = tmp_path / "member" / community.community_id
        assert (got / "data").read_bytes() == (community.folder / "data").read_bytes()


def test_seed_returns_once_peers_are_accepted(services, community):
    """libtorrent turns incoming peers away (torrent_not_ready) until it has checked a new torrent, and a member with
    no tick does not try again: seed() returns only after the check (torrent_checked_alert), held back here."""
    seeder = services("seeder", **NO_TICKS)
    held, release, returned = threading.Event(), threading.Event(), []
    dispatch = seeder._dispatch

    def hold_checked(e):
        if e.kind == ev.CHECKED:
            held.set()
            release.wait(30)
        dispatch(e)
    seeder._dispatch = hold_checked
    caller = threading.Thread(target=lambda: returned.append(
        seeder.seed(community.community_id, community.data_dir, community.raw)))
    caller.start()
    try:
        assert held.wait(WAIT)
        st = seeder.seeds[community.community_id]
        assert (st.state, st.ready.is_set(), returned) == ("starting", False, [])
    finally:
        release.set()
        caller.join(WAIT)
    assert returned == [st] and st.state == "idle"
    assert seeder.call(lambda: str(st.handle.status().state)).result(10) == "seeding"


def _tcp_sockets():
    """(local, remote, TCP_NODELAY) of this process's connected TCP sockets on 127.0.0.1."""
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=int(name))
        except OSError:
            continue
        try:
            if s.family == socket.AF_INET and s.type == socket.SOCK_STREAM:
                out.append((s.getsockname(), s.getpeername(), s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)))
        except OSError:
            pass
        finally:
            s.detach()
    return out


@pytest.mark.parametrize("nodelay", [True, False])
def test_peer_sockets_run_without_nagle(services, community, tmp_path, nodelay):
    seeder = services("seeder", tcp_nodelay=nodelay)
    seeder.seed(community.community_id, community.data_dir, community.raw)
    member = services("member", tcp_nodelay=nodelay)
    port = seeder.listen_port
    job = member.fetch(community.magnet, tmp_path / "member", Selection("all"), peers=[("127.0.0.1", port)])
    assert job.wait(WAIT) and job.state == "complete", job.snapshot()
    # the member keeps its connection to the seeder while it seeds: both ends are open sockets of this process
    socks = _tcp_sockets()
    outgoing = [d for local, remote, d in socks if remote == ("127.0.0.1", port)]
    accepted = [d for local, remote, d in socks if local == ("127.0.0.1", port)]
    assert outgoing and accepted, socks
    assert set(outgoing + accepted) == {int(nodelay)}
