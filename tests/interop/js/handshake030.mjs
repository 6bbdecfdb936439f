// js-waku @waku/sdk 0.0.30 (installed as "waku-sdk-030", the last release with the legacy store): the 66/WAKU2-METADATA
// handshake against our node. Its codec reads `shards` (field 2) one varint per tag only: a packed field 2 breaks it.
// Usage: node handshake030.mjs --peer=<ws multiaddr> --cluster=16 --shards=32,64
//   -> {"event":"ready","peerId":...} then {"event":"metadata","clusterId":N,"shards":[...],"error":null}
import { args, emit } from "./polyfill.mjs";
import { createLightNode } from "waku-sdk-030";
import { multiaddr } from "@multiformats/multiaddr";

const cluster = Number(args.cluster ?? 16);
const shards = String(args.shards ?? "32").split(",").map(Number);
const node = await createLightNode({
  networkConfig: { clusterId: cluster, shards },
  defaultBootstrap: false,
  libp2p: { filterMultiaddrs: false, hideWebSocketInfo: true },
});
const ma = multiaddr(args.peer);
const conn = await node.libp2p.dial(ma);
emit({ event: "ready", peerId: node.libp2p.peerId.toString() });
const res = await node.libp2p.services.metadata.query(conn.remotePeer);
emit({ event: "metadata", clusterId: res.shardInfo?.clusterId ?? null, shards: res.shardInfo?.shards ?? null,
       error: res.error ?? null });
await node.stop();
process.exit(0);
