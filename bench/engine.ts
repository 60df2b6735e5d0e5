import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Ollama } from 'ollama';
import pLimit from 'p-limit';
import type { StoredCall } from '../src/store/store.js';
import { recorder } from '../src/engine/recorder.js';
import { runDebate } from '../src/engine/run-debate.js';
import { openStore } from '../src/store/open.js';
import { emptyMetrics } from '../src/engine/structured-call.js';
import { simModels, testPreset } from '../test/helpers/panel.js';
import { startSimProcess } from './sim-process.js';

/**
 * Engine overhead: debates against a zero-latency simulator running in a child process,
 * so the CPU time measured here is Conclave's (prompting, validation, streaming, recording).
 * Also: peak RSS of a 10-agent debate, SQLite recording of 10,000 calls, `list` over 10,000 debates.
 */

const RUNS = Number(process.env.BENCH_RUNS ?? 7);

// Each measured run starts from a collected heap, so one run's garbage is never charged to the next
// (the engine and the bare client alternate).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function startSimChild(agents: number) {
  const preset = testPreset(Array.from({ length: agents }, (_, i) => `agent${i}`));
  return startSimProcess({ models: simModels(preset), tokenMs: 0 });
}

/**
 * The floor: the bare `ollama` client (its default fetch) streaming the same requests the
 * engine sent, from the same simulator, as many at a time, doing nothing with the replies.
 */
async function bareOnce(url: string, requests: StoredCall[], parallel: number) {
  const client = new Ollama({ host: url });
  const limit = pLimit(parallel);
  gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    requests.map((c) =>
      limit(async () => {
        const stream = await client.chat({
          model: c.model,
          messages: c.messages,
          options: c.options,
          ...(c.format ? { format: c.format } : {}),
          stream: true,
        });
        let content = '';
        for await (const chunk of stream) content += chunk.message.content;
        return content;
      }),
    ),
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpuMs: (cpu.user + cpu.system) / 1000, calls: requests.length };
}

async function debateOnce(url: string, agents: number, rounds: number, dbPath: string) {
  const preset = testPreset(
    Array.from({ length: agents }, (_, i) => `agent${i}`),
    { protocol: { maxRounds: rounds, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } },
  );
  const store = openStore(dbPath);
  gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await runDebate({ question: 'Should we do A?', preset, host: url, recorder: recorder(store), numParallel: 4 });
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const calls = store.getDebate(result.id).calls.length;
  store.close();
  return { wall, cpuMs: (cpu.user + cpu.system) / 1000, calls };
}

const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
try {
  const sim5 = await startSimChild(5);
  await debateOnce(sim5.url, 5, 4, join(dir, 'warm.db'));
  const recorded = openStore(join(dir, 'warm.db'));
  const requests = recorded.getDebate(recorded.listDebates()[0]!.id).calls;
  recorded.close();
  await bareOnce(sim5.url, requests, 4);
  // Interleaved, so both see the same machine load.
  const runs: Awaited<ReturnType<typeof debateOnce>>[] = [];
  const bare: Awaited<ReturnType<typeof bareOnce>>[] = [];
  for (let i = 0; i < RUNS; i++) {
    runs.push(await debateOnce(sim5.url, 5, 4, join(dir, `run${i}.db`)));
    bare.push(await bareOnce(sim5.url, requests, 4));
  }
  sim5.stop();
  const calls = runs[0]!.calls;
  const engineCpu = median(runs.map((r) => r.cpuMs / r.calls));
  const bareCpu = median(bare.map((r) => r.cpuMs / r.calls));
  console.log(`Engine overhead, 5 agents × (round 0 + 4 critique rounds), zero-latency simulator in a child process, ${RUNS} runs`);
  console.log(`  calls per debate              ${calls}`);
  console.log(`  wall time per debate (median) ${median(runs.map((r) => r.wall)).toFixed(1)} ms   (min ${Math.min(...runs.map((r) => r.wall)).toFixed(1)}, max ${Math.max(...runs.map((r) => r.wall)).toFixed(1)})`);
  console.log(`  engine CPU per call (median)  ${engineCpu.toFixed(2)} ms`);
  console.log(`  bare ollama client, same requests and replies: CPU per call (median) ${bareCpu.toFixed(2)} ms`);
  // Each engine run is paired with the bare run right after it, so the ratio of a pair shares the machine's load.
  const ratio = median(runs.map((r, i) => r.cpuMs / r.calls / (bare[i]!.cpuMs / bare[i]!.calls)));
  console.log(`  engine ÷ bare client          ${ratio.toFixed(2)}×  (median of ${RUNS} paired runs)`);
  console.log(`  wall time per call (median)   ${median(runs.map((r) => r.wall / r.calls)).toFixed(2)} ms`);

  const sim10 = await startSimChild(10);
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const big = await debateOnce(sim10.url, 10, 4, join(dir, 'ten.db'));
  clearInterval(sampler);
  sim10.stop();
  console.log(`\n10 agents × 5 rounds: ${big.calls} calls, ${big.wall.toFixed(0)} ms, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB (before: ${(rss0 / 2 ** 20).toFixed(0)} MiB)`);

  const store = openStore(join(dir, 'bulk.db'));
  const agents = [{ id: 'a', model: 'm', persona: null, cluster: null, role: 'debater' as const, digest: null }];
  const preset = testPreset(['a', 'b']);
  store.createDebate({ id: 'bulk', question: 'q', preset, engineVersion: 'bench', host: 'h', agents, createdAt: Date.now() });
  const message = 'x'.repeat(1500);
  const t1 = performance.now();
  for (let i = 0; i < 10_000; i++) {
    store.recordCall({
      debateId: 'bulk', stage: 'critique', round: i % 5, agentId: 'a', attempt: 0, host: 'h', model: 'm',
      messages: [{ role: 'user', content: message }], options: { num_ctx: 8192 }, format: { type: 'object' },
      raw: message, parsed: { updatedPosition: message }, status: 'ok', validationError: null, error: null, truncation: null,
      metrics: emptyMetrics(), startedAt: i, finishedAt: i + 1,
    });
  }
  const recordMs = performance.now() - t1;
  console.log(`\nSQLite: recording 10,000 calls (each its own transaction, ~4.5 KB) took ${recordMs.toFixed(0)} ms (${((recordMs / 10_000) * 1000).toFixed(0)} µs per call)`);
  for (let i = 0; i < 10_000; i++) {
    store.createDebate({ id: `d${i}`, question: `question ${i}`, preset, engineVersion: 'bench', host: 'h', agents, createdAt: i });
  }
  const listTimes: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    store.listDebates({ limit: 50 });
    listTimes.push(performance.now() - t);
  }
  const fullTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    store.listDebates({ limit: 100_000 });
    fullTimes.push(performance.now() - t);
  }
  console.log(`list over 10,001 debates: first page of 50 ${median(listTimes).toFixed(1)} ms, all rows ${median(fullTimes).toFixed(0)} ms (medians)`);
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
