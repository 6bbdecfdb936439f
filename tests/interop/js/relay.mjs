// js-waku relay node (@waku/sdk 0.0.27 + @waku/relay 0.0.14) for the interop tests.
// Usage: node relay.mjs --peer=<multiaddr> --cluster=16 --shard=32 --topic=<content topic>
//          --mode=send|recv --count=N
// Prints one JSON object per line: {"event":"ready"}, {"event":"sent",...}, {"event":"received",...}.
import { args, emit, hex } from "./polyfill.mjs";
import { createDecoder, createEncoder } from "@waku/sdk";
import { startRelayNode } from "./nodes.mjs";

const cluster = Number(args.cluster ?? 16), shard = Number(args.shard ?? 32), count = Number(args.count ?? 1);
const shardInfo = { clusterId: cluster, shard };
const node = await startRelayNode(args.peer, cluster, shard);
const decoder = createDecoder(args.topic, shardInfo);
let received = 0;
await node.relay.subscribe([decoder], (msg) => {
  emit({ event: "received", payload: hex(msg.payload), contentTopic: msg.contentTopic,
         timestamp: msg.timestamp ? msg.timestamp.getTime() : null, pubsubTopic: msg.pubsubTopic });
  received += 1;
  if (args.mode === "recv" && received >= count) { node.stop().then(() => process.exit(0)); }
});
emit({ event: "ready", peerId: node.libp2p.peerId.toString() });
if (args.mode === "send") {
  const encoder = createEncoder({ contentTopic: args.topic, pubsubTopicShardInfo: shardInfo });
  for (let i = 0; i < count; i++) {
    const payload = new TextEncoder().encode(`from js ${i}`);
    const res = await node.relay.send(encoder, { payload });
    emit({ event: "sent", i, recipients: res.successes.length, failures: res.failures?.length ?? 0 });
  }
  // keep running until the test kills us (lets gossip finish)
}
