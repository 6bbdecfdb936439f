// js-waku light node (@waku/sdk 0.0.36, installed as "waku-sdk-latest") for the interop tests:
// store v3 queries and lightpush v3 against our node.
// Usage: node light.mjs --peer=<multiaddr> --cluster=16 --shard=32 --topic=<content topic>
//   --mode=store --forward=true|false --limit=N [--start=ms --end=ms] [--hashes=hex,hex] -> {"event":"message",...} lines, then
//                                                                          {"event":"done","count":N}
//   --mode=lightpush --count=N [--legacy=true]                                         -> {"event":"pushed",...} lines
import { args, emit, hex } from "./polyfill.mjs";
import { startLightNode } from "./nodes.mjs";

const cluster = Number(args.cluster ?? 16), shard = Number(args.shard ?? 32);
const node = await startLightNode(args.peer, cluster, args.mode);
emit({ event: "ready", peerId: node.libp2p.peerId.toString() });

if (args.mode === "store") {
  const decoder = node.createDecoder({ contentTopic: args.topic, shardId: shard });
  const opts = { paginationForward: args.forward !== "false", paginationLimit: Number(args.limit ?? 20) };
  if (args.start) opts.timeStart = new Date(Number(args.start));
  if (args.end) opts.timeEnd = new Date(Number(args.end));
  if (args.hashes) opts.messageHashes = args.hashes.split(",").map((h) => Uint8Array.from(Buffer.from(h, "hex")));
  let count = 0, pages = 0;
  for await (const page of node.store.queryGenerator([decoder], opts)) {
    pages += 1;
    for (const p of page) {
      const m = await p;
      if (!m) continue;
      count += 1;
      emit({ event: "message", payload: hex(m.payload), hash: m.hashStr ?? null,
             timestamp: m.timestamp ? m.timestamp.getTime() : null });
    }
  }
  emit({ event: "done", count, pages });
} else if (args.mode === "lightpush") {
  const encoder = node.createEncoder({ contentTopic: args.topic, shardId: shard });
  for (let i = 0; i < Number(args.count ?? 1); i++) {
    const res = await node.lightPush.send(encoder, { payload: new TextEncoder().encode(`pushed by js ${i}`) },
                                          { useLegacy: args.legacy === "true" });
    emit({ event: "pushed", i, successes: res.successes.length,
           failures: (res.failures ?? []).map((f) => String(f.error ?? f)) });
  }
  emit({ event: "done" });
}
await node.stop();
process.exit(0);
