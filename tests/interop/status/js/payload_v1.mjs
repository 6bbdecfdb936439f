// Reads one JSON request per line on stdin, answers one JSON line each, using js-waku's payload-v1 code.
// {"op":"encrypt","payload":hex,"key":hex,"sig_priv":hex|null} -> {"envelope":hex}
// {"op":"decrypt","envelope":hex,"key":hex} -> {"payload":hex,"public_key":hex|null} or {"error":...}
import { createInterface } from "node:readline";
import { preCipher, encryptSymmetric, decryptSymmetric, postCipher } from "@waku/message-encryption/symmetric";

const hex = (b) => Buffer.from(b).toString("hex");
const bytes = (h) => new Uint8Array(Buffer.from(h, "hex"));

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const req = JSON.parse(line);
  let res;
  try {
    if (req.op === "encrypt") {
      const pre = await preCipher(bytes(req.payload), req.sig_priv ? bytes(req.sig_priv) : undefined);
      res = { envelope: hex(await encryptSymmetric(pre, bytes(req.key))) };
    } else {
      const out = postCipher(await decryptSymmetric(bytes(req.envelope), bytes(req.key)));
      res = out ? { payload: hex(out.payload), public_key: out.sig ? hex(out.sig.publicKey) : null }
                : { error: "postCipher rejected the payload" };
    }
  } catch (e) {
    res = { error: String(e) };
  }
  process.stdout.write(JSON.stringify(res) + "\n");
}
