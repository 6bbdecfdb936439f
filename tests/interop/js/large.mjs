// Large messages against our node (tests/interop/waku/test_js_waku_large.py). Payloads are random bytes; only
// their size and SHA-256 are printed, never the bytes.
// Usage: node large.mjs --peer=<multiaddr> --topic=<content topic> [--cluster=16 --shard=32]
//   --mode=relay-send --sizes=N,N,...  (@waku/sdk 0.0.27 relay) one message per size, in order; a size "max" is the
//                                      largest payload whose encoded message is exactly js-waku's cap (1 MiB)
//                                      -> {"event":"sent","size":N,"sha256":..,"recipients":N,"failures":[..]}
//   --mode=relay-recv --count=N        (relay)  -> {"event":"received","size":N,"sha256":..} per message
//   --mode=lightpush --sizes=N,...     (@waku/sdk 0.0.36 lightpush v3) -> {"event":"pushed","size":N,...}
//   --mode=store                       (@waku/sdk 0.0.36 store v3, forward) -> {"event":"message","size":N,
//                                      "sha256":..,"hash":..} per message, then {"event":"done","count":N,"pages":N}
// js-libp2p-gossipsub reads RPCs up to 4 MiB (it-length-prefixed's default, `maxInboundDataLength`), so js-waku's
// own 1 MiB cap on an encoded message (isWireSizeUnderCap) is what limits js-waku; nothing to configure here.
import { createHash, randomBytes } from "node:crypto";
import { args, emit } from "./polyfill.mjs";
import { startLightNode, startRelayNode } from "./nodes.mjs";

const cluster = Number(args.cluster ?? 16), shard = Number(args.shard ?? 32);
const JS_WAKU_CAP = 1024 * 1024;   // @waku/utils isWireSizeUnderCap: encoded message length <= 1 MiB
const sha256 = (u8) => createHash("sha256").update(u8).digest("hex");
const failures = (res) => (res.failures ?? []).map((f) => String(f.error ?? f));

async function payloadFor(size, encoder) {
  if (size !== "max") return new Uint8Array(randomBytes(Number(size)));
  // the envelope (content topic, timestamp, field tags) is the same for any payload of 16 KiB to 2 MiB
  const probe = 100_000;
  const wire = await encoder.toWire({ payload: new Uint8Array(probe), timestamp: new Date() });
  return new Uint8Array(randomBytes(JS_WAKU_CAP - (wire.length - probe)));
}

async function relay() {
  const { createDecoder, createEncoder } = await import("@waku/sdk");
  const shardInfo = { clusterId: cluster, shard };
  const node = await startRelayNode(args.peer, cluster, shard);
  let received = 0;
  await node.relay.subscribe([createDecoder(args.topic, shardInfo)], (msg) => {
    emit({ event: "received", size: msg.payload.length, sha256: sha256(msg.payload), pubsubTopic: msg.pubsubTopic,
           contentTopic: msg.contentTopic });
    received += 1;
    if (args.mode === "relay-recv" && received >= Number(args.count ?? 1)) node.stop().then(() => process.exit(0));
  });
  emit({ event: "ready", peerId: node.libp2p.peerId.toString() });
  if (args.mode === "relay-send") {
    const encoder = createEncoder({ contentTopic: args.topic, pubsubTopicShardInfo: shardInfo });
    for (const size of args.sizes.split(",")) {
      const payload = await payloadFor(size, encoder);
      const wire = await encoder.toWire({ payload, timestamp: new Date() });
      const res = await node.relay.send(encoder, { payload });
      emit({ event: "sent", size: payload.length, wireSize: wire.length, sha256: sha256(payload),
             recipients: res.successes.length, failures: failures(res) });
    }
  }
  // keep running until the test kills us (lets gossip finish)
}

async function light() {
  const node = await startLightNode(args.peer, cluster, args.mode);
  emit({ event: "ready", peerId: node.libp2p.peerId.toString() });
  if (args.mode === "store") {
    const decoder = node.createDecoder({ contentTopic: args.topic, shardId: shard });
    let count = 0, pages = 0;
    for await (const page of node.store.queryGenerator([decoder], { paginationForward: true })) {
      pages += 1;
      for (const p of page) {
        const m = await p;
        if (!m) continue;
        count += 1;
        emit({ event: "message", size: m.payload.length, sha256: sha256(m.payload), hash: m.hashStr ?? null });
      }
    }
    emit({ event: "done", count, pages });
  } else {
    const encoder = node.createEncoder({ contentTopic: args.topic, shardId: shard });
    for (const size of args.sizes.split(",")) {
      const payload = await payloadFor(size, encoder);
      const res = await node.lightPush.send(encoder, { payload });
      emit({ event: "pushed", size: payload.length, sha256: sha256(payload), successes: res.successes.length,
             failures: failures(res) });
    }
    emit({ event: "done" });
  }
  await node.stop();
  process.exit(0);
}

await (args.mode.startsWith("relay") ? relay() : light());
