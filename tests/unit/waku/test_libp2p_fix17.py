"""Fix 17 (core/waku/libp2p_patches/host.py): a stopped py-libp2p host leaves the sockets of the connections it dialled
open (Swarm.run closes them inside its cancelled scope), so its peers keep a connection that never reads again.
Its effect under load (a relay peer whose queue stops moving): tests/integration/waku/test_relay_stall.py."""
import multiaddr
import trio
from libp2p import new_host
from libp2p.crypto.secp256k1 import create_new_key_pair
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux

from core.waku.libp2p_patches.host import disable_auto_connector, noise_only_security
from core.waku.node import NodeConfig, WakuNode


def _socket(swarm_conn):
    """The TCP socket under a connection (yamux over Noise over TCP)."""
    raw = swarm_conn.muxed_conn.secured_conn.conn.read_writer.read_write_closer
    return raw.stream.stream.socket


def test_fix17_upstream_stop_leaves_dialled_sockets_open():
    async def main():
        server = WakuNode(NodeConfig(ws_port=None))
        kp = create_new_key_pair()
        upstream = new_host(key_pair=kp, sec_opt=noise_only_security(kp), muxer_opt={YAMUX: Yamux})
        disable_auto_connector(upstream)
        async with trio.open_nursery() as n:
            await n.start(server.run)
            async with upstream.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
                await upstream.connect(info_from_p2p_addr(multiaddr.Multiaddr(server.listen_addrs()[0])))
                await server.wait_connections(lambda: bool(server.connected_peers()), 5)  # its side is up too
                [conn] = upstream.get_network().get_connections()
                sock = _socket(conn)
            # the host has stopped, yet its socket is open and the server still counts the connection
            assert sock.fileno() != -1
            assert server.connected_peers() == [upstream.get_id().pretty()]
            sock.close()
            n.cancel_scope.cancel()
    trio.run(main)


def test_fix17_a_stopped_node_closes_its_connections():
    async def main():
        server = WakuNode(NodeConfig(ws_port=None))
        client = WakuNode(NodeConfig(ws_port=None))
        async with trio.open_nursery() as n:
            await n.start(server.run)
            with trio.CancelScope() as client_scope:
                async with trio.open_nursery() as cn:
                    await cn.start(client.run)
                    await client.connect(server.listen_addrs()[0])
                    [conn] = client.host.get_network().get_connections()
                    sock = _socket(conn)
                    client_scope.cancel()   # how EmbeddedWakuBackend.stop() ends a node
            assert sock.fileno() == -1
            await server.wait_connections(lambda: not server.connected_peers(), 5)
            n.cancel_scope.cancel()
    trio.run(main)
