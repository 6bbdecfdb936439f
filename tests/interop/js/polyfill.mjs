// Node 20 lacks Promise.withResolvers, which newer libp2p code calls (WAKU.md install tweak).
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}
export const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
export const hex = (u8) => Buffer.from(u8).toString("hex");
export const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const i = a.indexOf("=");
  return [a.slice(2, i), a.slice(i + 1)];
}));
