import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRun, executeBench } from '../src/bench/runner.js';
import { loadSuite } from '../src/bench/suite.js';
import type { HostEntry } from '../src/config/preset-schema.js';
import { presetSchema } from '../src/config/preset-schema.js';
import { runDebate } from '../src/engine/run-debate.js';
import { OpenAIGateway } from '../src/openai/gateway.js';
import { critiqueSchema, formatSchemaOf, judgeSchema, openingSchema, synthesisSchema } from '../src/protocol/schemas.js';
import { openStore } from '../src/store/open.js';
import { type SimProcess, startSimProcess } from './sim-process.js';

/**
 * Scale-out past one server: a 16-agent debate and an arithmetic bench against one, two and four
 * OpenAI-compatible replicas of the simulator (as vLLM or llama-server replicas serve: every model
 * resident, `SLOTS` requests at once each, a fixed time per token). Prints each run's makespan and
 * its ratio to a lower bound: for the debate, the critical path (each round's calls in waves of the
 * pool's slots, then the judge; the synthesis last); for the bench, the work bound (the time of
 * every call to its busiest model, divided by that model's slots in the pool). `npm run bench:scale`.
 */

const TOKEN_MS = Number(process.env.BENCH_TOKEN_MS ?? 20);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 4);
const WORDS = Number(process.env.BENCH_WORDS ?? 60);
const ROUNDS = 2;
const AGENTS = 16;
const ITEMS = Number(process.env.BENCH_ITEMS ?? 8);
const REPLICAS = (process.env.BENCH_REPLICAS ?? '1,2,4').split(',').map(Number);

const MODELS = [{ name: 'panel:8b' }, { name: 'judge:1b' }, { name: 'synth:1b' }];

interface Times {
  opening: number;
  critique: number;
  judge: number;
  synthesis: number;
}

async function replicas(n: number): Promise<SimProcess[]> {
  return Promise.all(Array.from({ length: n }, () => startSimProcess({ api: 'openai', models: MODELS, numParallel: SLOTS, tokenMs: TOKEN_MS }, WORDS)));
}

const hostsOf = (sims: SimProcess[]): HostEntry[] => sims.map((s) => ({ url: `${s.url}/v1`, api: 'openai', numParallel: SLOTS }));

/** One call of each kind alone on an idle replica: the bound's call times, with the simulator's own costs and no queueing. */
async function calibrate(): Promise<Times> {
  const [sim] = await replicas(1);
  try {
    const g = new OpenAIGateway(`${sim!.url}/v1`);
    const time = async (schema: Parameters<typeof formatSchemaOf>[0], model: string, text = ''): Promise<number> => {
      const samples: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        await g.chat({ model, messages: [{ role: 'system', content: 'You are agent agent0.' }, { role: 'user', content: text }], format: formatSchemaOf(schema) });
        samples.push(performance.now() - t);
      }
      return samples.sort((a, b) => a - b)[1]!;
    };
    return {
      opening: await time(openingSchema, 'panel:8b'),
      critique: await time(critiqueSchema, 'panel:8b', 'critique round 1'),
      judge: await time(judgeSchema, 'judge:1b'),
      synthesis: await time(synthesisSchema, 'synth:1b'),
    };
  } finally {
    sim!.stop();
  }
}

function debateBound(t: Times, slots: number): number {
  const waves = Math.ceil(AGENTS / slots);
  return waves * t.opening + t.judge + ROUNDS * (waves * t.critique + t.judge) + t.synthesis;
}

async function debate(n: number, t: Times): Promise<{ makespan: number; bound: number; peak: number }> {
  const sims = await replicas(n);
  try {
    const preset = presetSchema.parse({
      name: `scale-${n}`,
      agents: Array.from({ length: AGENTS }, (_, i) => ({ id: `agent${i}`, model: 'panel:8b', persona: `You are agent agent${i}.` })),
      judge: { model: 'judge:1b' },
      synthesizer: { model: 'synth:1b' },
      protocol: { maxRounds: ROUNDS, convergenceThreshold: 0.99, callTimeoutSeconds: 300 },
      hosts: hostsOf(sims),
    });
    const t0 = performance.now();
    await runDebate({ question: 'Should we do A?', preset, host: `${sims[0]!.url}/v1` });
    const makespan = performance.now() - t0;
    const counters = await Promise.all(sims.map((s) => s.counters()));
    const peak = Math.max(...counters.map((c) => c.perModel['panel:8b']?.peakInFlight ?? 0));
    return { makespan, bound: debateBound(t, n * SLOTS), peak };
  } finally {
    for (const s of sims) s.stop();
  }
}

async function bench(n: number): Promise<{ makespan: number; bound: number; calls: number }> {
  const sims = await replicas(n);
  const dir = mkdtempSync(join(tmpdir(), 'conclave-scale-'));
  const store = openStore(join(dir, 'scale.db'));
  try {
    const preset = presetSchema.parse({
      name: 'scale-bench',
      agents: ['a', 'b', 'c'].map((id) => ({ id, model: 'panel:8b', persona: `You are agent ${id}.` })),
      judge: { model: 'judge:1b' },
      synthesizer: { model: 'synth:1b' },
      protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 300 },
    });
    const items = await loadSuite('arithmetic');
    const hosts = hostsOf(sims);
    const runId = createRun({ store, suite: 'arithmetic', items, presets: [{ preset, source: 'bench/scale.ts' }], host: hosts[0]!.url, hosts, limit: ITEMS, concurrency: ITEMS, numParallel: SLOTS });
    const t0 = performance.now();
    await executeBench({ store, runId });
    const makespan = performance.now() - t0;
    // Every call the bench made, debates and baselines: each model's service time, spread over that model's slots in the pool.
    const rows = store.read('read the calls', (sqlite) =>
      sqlite.prepare('select model, finished_at - started_at as ms from calls union all select model, finished_at - started_at as ms from bench_calls').all(),
    ) as { model: string; ms: number }[];
    const work = new Map<string, number>();
    for (const r of rows) work.set(r.model, (work.get(r.model) ?? 0) + r.ms);
    return { makespan, bound: Math.max(...work.values()) / (n * SLOTS), calls: rows.length };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
    for (const s of sims) s.stop();
  }
}

const cal = await calibrate();
const debates: { n: number; makespan: number; bound: number; peak: number }[] = [];
const benches: { n: number; makespan: number; bound: number; calls: number }[] = [];
for (const n of REPLICAS) {
  debates.push({ n, ...(await debate(n, cal)) });
  process.stderr.write(`  debate on ${n} replica${n === 1 ? '' : 's'} done\n`);
  benches.push({ n, ...(await bench(n)) });
  process.stderr.write(`  bench on ${n} replica${n === 1 ? '' : 's'} done\n`);
}

const pad = (v: string, w: number): string => v.padEnd(w);
console.log(`Scale-out benchmark: OpenAI-compatible replicas of the simulator, ${SLOTS} slots each, ${TOKEN_MS} ms per token, answers of ${WORDS} words`);
console.log(`Calibrated alone on an idle replica: opening ${cal.opening.toFixed(0)} ms, critique ${cal.critique.toFixed(0)} ms, judge ${cal.judge.toFixed(0)} ms, synthesis ${cal.synthesis.toFixed(0)} ms`);
console.log(`\nDebate: ${AGENTS} agents on one model, round 0 + ${ROUNDS} critique rounds, judge each round, synthesis. Bound: the critical path in waves of the pool's slots.`);
console.log(`  ${pad('replicas', 10)}${pad('slots', 7)}${pad('makespan', 11)}${pad('bound', 10)}${pad('÷ bound', 9)}${pad('peak in flight', 16)}speed-up`);
for (const r of debates) {
  const base = debates[0]!.makespan;
  console.log(`  ${pad(String(r.n), 10)}${pad(String(r.n * SLOTS), 7)}${pad(`${r.makespan.toFixed(0)} ms`, 11)}${pad(`${r.bound.toFixed(0)} ms`, 10)}${pad((r.makespan / r.bound).toFixed(2), 9)}${pad(String(r.peak), 16)}${(base / r.makespan).toFixed(2)}×`);
}
console.log(`\nArithmetic bench: ${ITEMS} items × 1 preset (3 agents, 1 critique round, single and self-consistency baselines), ${ITEMS} items in flight. Bound: the busiest model's call time ÷ its slots in the pool.`);
console.log(`  ${pad('replicas', 10)}${pad('slots', 7)}${pad('makespan', 11)}${pad('bound', 10)}${pad('÷ bound', 9)}${pad('calls', 7)}speed-up`);
for (const r of benches) {
  const base = benches[0]!.makespan;
  console.log(`  ${pad(String(r.n), 10)}${pad(String(r.n * SLOTS), 7)}${pad(`${r.makespan.toFixed(0)} ms`, 11)}${pad(`${r.bound.toFixed(0)} ms`, 10)}${pad((r.makespan / r.bound).toFixed(2), 9)}${pad(String(r.calls), 7)}${(base / r.makespan).toFixed(2)}×`);
}
