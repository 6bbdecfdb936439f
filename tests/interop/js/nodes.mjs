// How the interop scripts start js-waku and reach our node (relay.mjs, light.mjs, large.mjs share it).
import { multiaddr } from "@multiformats/multiaddr";

const LIBP2P = { filterMultiaddrs: false, hideWebSocketInfo: true };   // loopback addresses, no websocket info

// @waku/sdk 0.0.27 relay node on cluster/shard, dialled to `peer`, returned once relay works with it.
export async function startRelayNode(peer, cluster, shard) {
  const { createRelayNode } = await import("@waku/sdk/relay");
  const { waitForRemotePeer, Protocols } = await import("@waku/sdk");
  const node = await createRelayNode({ networkConfig: { clusterId: cluster, shards: [shard] }, libp2p: LIBP2P });
  await node.start();
  await node.dial(multiaddr(peer));
  await waitForRemotePeer(node, [Protocols.Relay], 20000);
  return node;
}

// @waku/sdk 0.0.36 light node dialled to `peer`, returned once `mode`'s service ("store" or "lightpush") is
// registered; re-dials if js-waku has not registered it (rarely seen under heavy load).
export async function startLightNode(peer, cluster, mode) {
  const { createLightNode, Protocols } = await import("waku-sdk-latest");
  const node = await createLightNode({ networkConfig: { clusterId: cluster }, defaultBootstrap: false, libp2p: LIBP2P });
  await node.start();
  const want = mode === "store" ? Protocols.Store : Protocols.LightPush;
  for (let attempt = 1; ; attempt++) {
    try {
      await node.dial(multiaddr(peer));
      await node.waitForPeers([want], 8000);
      return node;
    } catch (e) {
      process.stderr.write(`attempt ${attempt}: ${e}\n`);
      if (attempt >= 3) throw e;
    }
  }
}
