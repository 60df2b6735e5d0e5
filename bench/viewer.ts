import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CliIO } from '../src/cli/io.js';
import { main } from '../src/cli/main.js';
import type { DebateEvent } from '../src/engine/events.js';
import { createViewer } from '../src/serve/server.js';
import { dataVersion, openStoreReadOnly } from '../src/serve/store.js';

/**
 * The web viewer: server time per page and document for simulated debates, the cost
 * of one idle poll, and how long after a call is recorded its event reaches a
 * browser's stream (default 300 ms polling). Prints figures; asserts nothing.
 */

const N = Number(process.env.BENCH_RUNS ?? 30);
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const sink = () => ({ isTTY: false, columns: 100, write: () => true }) as unknown as NodeJS.WriteStream;
const io: CliIO = { stdout: sink(), stderr: sink(), env: {}, cwd: process.cwd() };
const db = join(mkdtempSync(join(tmpdir(), 'conclave-bench-viewer-')), 'record.db');
const demo = (preset: string, tokenMs = 0) => main(['demo', '--preset', preset, '--db', db, '--quiet', '--token-ms', String(tokenMs)], io);

for (const preset of ['tech-decision', 'tension-map', 'cluster-vote']) await demo(preset);
for (let i = 0; i < 47; i++) await demo('tech-decision');

const store = openStoreReadOnly(db);
const viewer = createViewer({ store });
const url = await viewer.listen(0, '127.0.0.1');
const list = (await (await fetch(`${url}/api/debates?limit=1000`)).json()) as { id: string; presetName: string; callCount: number }[];

async function timed(path: string): Promise<{ ms: number; kib: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    bytes = (await (await fetch(`${url}${path}`)).arrayBuffer()).byteLength;
    times.push(performance.now() - t0);
  }
  return { ms: median(times), kib: bytes / 1024 };
}

const rows: string[][] = [];
rows.push(['GET /', `${list.length} debates`, ...Object.values(await timed('/')).map((x) => x.toFixed(1))]);
for (const preset of ['tech-decision', 'tension-map', 'cluster-vote']) {
  const d = list.find((r) => r.presetName === preset)!;
  for (const path of [`/debates/${d.id}`, `/api/debates/${d.id}`, `/api/debates/${d.id}/events`]) {
    rows.push([`GET ${path.replace(d.id, '<id>')}`, `${preset}, ${d.callCount} calls`, ...Object.values(await timed(path)).map((x) => x.toFixed(1))]);
  }
}
console.log(`Viewer, median of ${N} requests over loopback (server time + fetch):\n`);
console.log('| request | record | ms | KiB |\n|---|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);

const polls = 20_000;
const t0 = performance.now();
for (let i = 0; i < polls; i++) dataVersion(store);
console.log(`\nIdle poll (PRAGMA data_version): ${(((performance.now() - t0) / polls) * 1000).toFixed(1)} µs`);

// Live: a debate in this process writes through its own connection; the stream reads through the viewer's.
const before = new Set(list.map((r) => r.id));
const run = demo('tech-decision', 20);
let id: string | undefined;
while (!id) {
  await new Promise((r) => setTimeout(r, 50));
  const now = (await (await fetch(`${url}/api/debates`)).json()) as { id: string }[];
  id = now.find((r) => !before.has(r.id))?.id;
}
const lags: number[] = [];
const opened = Date.now();
const res = await fetch(`${url}/api/debates/${id}/events`);
const reader = res.body!.getReader();
const decoder = new TextDecoder();
let buffer = '';
for (let done = false; !done; ) {
  const chunk = await reader.read();
  if (chunk.done) break;
  buffer += decoder.decode(chunk.value, { stream: true });
  let cut: number;
  while ((cut = buffer.indexOf('\n\n')) >= 0) {
    const block = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    if (block.includes('event: end')) done = true;
    const data = block.split('\n').find((l) => l.startsWith('data: '));
    if (!data || done) continue;
    const e = JSON.parse(data.slice(6)) as DebateEvent;
    if (e.type !== 'call.finished') continue;
    // Calls recorded before the stream opened arrive in its first burst: not a live figure.
    if (e.call.finishedAt >= opened) lags.push(Date.now() - e.call.finishedAt);
  }
}
await run;
console.log(`Live: ${lags.length} calls streamed while recorded; from the call's end to its event on the stream: median ${median(lags).toFixed(0)} ms, max ${Math.max(...lags).toFixed(0)} ms (polling every 300 ms)`);
await viewer.close();
store.close();
