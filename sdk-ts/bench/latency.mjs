// `node sdk-ts/bench/latency.mjs STORE [SUBSCRIBERS] [COMMITS]` (run by hand, scripts/sdk_bench.sh):
// the commit-to-event latency through the TypeScript SDK. SUBSCRIBERS entity subscriptions
// (a `stardust lsp` connection each) follow while one client makes COMMITS commits one after
// the other; for each commit and subscriber, the time from sending the confirm to the
// subscriber's event. Needs a built sdk-ts (npm run build) and a running core.
import { connect } from "../dist/src/index.js";

const [store, subs = "1", commits = "200"] = process.argv.slice(2);
if (!store) {
  console.error("usage: latency.mjs STORE [SUBSCRIBERS] [COMMITS]");
  process.exit(2);
}
const client = await connect(store, { name: "latency-ts" });
const created = await (await client.patch({ ops: [{ create: { id: "?x", type: "probe", name: "ts latency probe" } }] })).confirm();
const id = created.resolved["?x"];
const subscriptions = Array.from({ length: Number(subs) }, () => client.subscribeEntities());
const opened = performance.now();
await Promise.all(subscriptions.map((s) => s.open()));
console.log(`${subs} subscriptions opened in ${((performance.now() - opened) / 1000).toFixed(2)} s`);

// Each subscriber's events, as (seq, time) as they arrive.
const arrivals = subscriptions.map(() => new Map());
const waiters = [];
for (const [i, s] of subscriptions.entries()) {
  (async () => {
    for (;;) {
      const r = await s.next();
      if (r.done) return;
      arrivals[i].set(r.value.seq, performance.now());
      for (const w of waiters.splice(0)) w();
    }
  })();
}
const samples = [];
for (let n = 0; n < Number(commits); n++) {
  const preview = await client.patch({ ops: [{ set: { id, n } }] });
  const sent = performance.now();
  const { seq } = await preview.confirm();
  // Events coalesce: a subscriber's first event at or past `seq` accounts for this commit.
  const at = (a) => { for (const [s, t] of a) if (s >= seq) return t; return undefined; };
  while (arrivals.some((a) => at(a) === undefined)) await new Promise((r) => waiters.push(r));
  for (const a of arrivals) { samples.push(at(a) - sent); a.clear(); }
}
samples.sort((a, b) => a - b);
const q = (p) => samples[Math.round((samples.length - 1) * p)].toFixed(3);
console.log(`ts confirm sent -> event (${subs} subscribers): n=${samples.length} p50=${q(0.5)}ms p90=${q(0.9)}ms p99=${q(0.99)}ms max=${q(1)}ms`);
for (const s of subscriptions) s.close();
client.close();
