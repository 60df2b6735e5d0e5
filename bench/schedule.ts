import { presetSchema } from '../src/config/preset-schema.js';
import { runDebate } from '../src/engine/run-debate.js';
import type { Strategy } from '../src/schedule/scheduler.js';
import { Gateway } from '../src/ollama/gateway.js';
import { critiqueSchema, formatSchemaOf, judgeSchema, openingSchema, synthesisSchema } from '../src/protocol/schemas.js';
import { type SimProcess, startSimProcess } from './sim-process.js';

/**
 * The same debates under three dispatch strategies on the simulator: `sequential` (one call at a
 * time, a hand-written loop), `unbounded` (every call of a round at once, as most debate tools do),
 * and `planned` (Conclave's scheduler). Prints makespan against a lower bound computed from the
 * scenario, model loads and reloads, peak calls in flight per model, and engine CPU per call.
 */

const LOAD_MS = Number(process.env.BENCH_LOAD_MS ?? 300);
const TOKEN_MS = Number(process.env.BENCH_TOKEN_MS ?? 20);
const ROUNDS = 2;
/** Words in each agent answer: agents write much more than the judge does, as real models do. */
const WORDS = Number(process.env.BENCH_WORDS ?? 120);
const GB = 1e9;

interface Scenario {
  name: string;
  text: string;
  agentModels: string[];
  hosts: { numParallel: number; vramGiB: number; maxLoadedModels: number; models: { name: string; sizeBytes: number }[] }[];
  /** Model loads the scenario cannot avoid. */
  minLoads: number;
  /** Lower bound on makespan in ms: critical path of calls plus unavoidable serialized loads. */
  lowerBound: (t: Times) => number;
}

interface Times {
  opening: number;
  critique: number;
  judge: number;
  synthesis: number;
  load: number;
}

const panelModel = (name: string, size = 5 * GB) => ({ name, sizeBytes: size });
const support = [panelModel('judge:1b', 1 * GB), panelModel('synth:1b', 1 * GB)];
const gib = (bytes: number): number => bytes / 2 ** 30;

const scenarios: Scenario[] = [
  {
    name: 'S1',
    text: '5 agents on 5 models that all fit, 1 slot each',
    agentModels: ['m1:5b', 'm2:5b', 'm3:5b', 'm4:5b', 'm5:5b'],
    hosts: [{ numParallel: 1, vramGiB: 64, maxLoadedModels: 8, models: [...['m1:5b', 'm2:5b', 'm3:5b', 'm4:5b', 'm5:5b'].map((m) => panelModel(m)), ...support] }],
    minLoads: 7,
    // Loads are serialized: the fifth panel model starts answering after 5 loads; the judge's load can hide behind it.
    lowerBound: (t) => Math.max(5 * t.load + t.opening, 6 * t.load) + t.judge + ROUNDS * (t.critique + t.judge) + t.synthesis,
  },
  {
    name: 'S2',
    text: '6 agents on 3 models (2 each), VRAM for 2 of them, 2 slots each',
    agentModels: ['m1:5b', 'm1:5b', 'm2:5b', 'm2:5b', 'm3:5b', 'm3:5b'],
    hosts: [{ numParallel: 2, vramGiB: gib(2 * 5.2 * GB + 2.4 * GB), maxLoadedModels: 4, models: [...['m1:5b', 'm2:5b', 'm3:5b'].map((m) => panelModel(m)), ...support] }],
    // Round 0 loads all three panel models; each later round must bring back the one evicted; judge and synthesizer once.
    minLoads: 3 + ROUNDS + 2,
    lowerBound: (t) => 3 * t.load + 2 * t.opening + t.judge + ROUNDS * (t.load + 2 * t.critique + t.judge) + t.synthesis,
  },
  {
    name: 'S3',
    text: '8 agents on one model with 4 slots',
    agentModels: Array.from({ length: 8 }, () => 'm1:5b'),
    hosts: [{ numParallel: 4, vramGiB: 24, maxLoadedModels: 3, models: [panelModel('m1:5b'), ...support] }],
    minLoads: 3,
    lowerBound: (t) => t.load + 2 * t.opening + t.judge + ROUNDS * (2 * t.critique + t.judge) + t.synthesis,
  },
  {
    name: 'S4',
    text: 'S3 over a pool of 2 hosts',
    agentModels: Array.from({ length: 8 }, () => 'm1:5b'),
    hosts: [0, 1].map(() => ({ numParallel: 4, vramGiB: 24, maxLoadedModels: 3, models: [panelModel('m1:5b'), ...support] })),
    minLoads: 4,
    lowerBound: (t) => t.load + t.opening + t.judge + ROUNDS * (t.critique + t.judge) + t.synthesis,
  },
];

/**
 * Calibrate the bound's call and load times on an idle simulator: one call of each kind alone,
 * so the bound includes the simulator's own per-call costs but no queueing, loading or scheduling.
 */
async function calibrate(): Promise<Times> {
  const sim = await startSimProcess({ models: [{ name: 'cal:1b' }, { name: 'cal2:1b' }], loadMs: LOAD_MS, tokenMs: TOKEN_MS }, WORDS);
  try {
    const g = new Gateway(sim.url);
    const time = async (fn: () => Promise<unknown>): Promise<number> => {
      const samples: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        await fn();
        samples.push(performance.now() - t);
      }
      return samples.sort((a, b) => a - b)[1]!;
    };
    const ask = (schema: Parameters<typeof formatSchemaOf>[0], text = '') =>
      g.chat({ model: 'cal:1b', messages: [{ role: 'system', content: 'You are agent agent0.' }, { role: 'user', content: text }], format: formatSchemaOf(schema) });
    const t0 = performance.now();
    await g.warm('cal2:1b', {});
    const load = performance.now() - t0;
    await g.warm('cal:1b', {});
    return {
      opening: await time(() => ask(openingSchema)),
      critique: await time(() => ask(critiqueSchema, 'critique round 1')),
      judge: await time(() => ask(judgeSchema)),
      synthesis: await time(() => ask(synthesisSchema)),
      load,
    };
  } finally {
    sim.stop();
  }
}

interface Row {
  scenario: string;
  strategy: Strategy;
  makespan: number;
  ratio: number;
  loads: number;
  reloads: number;
  peak: string;
  slotsOk: boolean;
  cpuPerCall: number;
}

async function runOne(s: Scenario, strategy: Strategy, t: Times): Promise<Row> {
  const sims: SimProcess[] = [];
  for (const h of s.hosts) {
    sims.push(await startSimProcess({ models: h.models, numParallel: h.numParallel, vramBytes: h.vramGiB * 2 ** 30, maxLoadedModels: h.maxLoadedModels, loadMs: LOAD_MS, tokenMs: TOKEN_MS }, WORDS));
  }
  try {
    const agentIds = s.agentModels.map((_, i) => `agent${i}`);
    const preset = presetSchema.parse({
      name: s.name,
      agents: s.agentModels.map((model, i) => ({ id: agentIds[i], model, persona: `You are agent ${agentIds[i]}.` })),
      judge: { model: 'judge:1b' },
      synthesizer: { model: 'synth:1b' },
      protocol: { maxRounds: ROUNDS, convergenceThreshold: 0.99, callTimeoutSeconds: 120 },
      hosts: s.hosts.map((h, i) => ({ url: sims[i]!.url, vramGiB: h.vramGiB, numParallel: h.numParallel, maxLoadedModels: h.maxLoadedModels })),
    });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await runDebate({ question: 'Should we do A?', preset, host: sims[0]!.url, strategy });
    const makespan = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const counters = await Promise.all(sims.map((x) => x.counters()));
    const calls = counters.reduce((n, c) => n + c.requests, 0);
    const peaks = new Map<string, number>();
    for (const c of counters) for (const [m, pm] of Object.entries(c.perModel)) peaks.set(m, Math.max(peaks.get(m) ?? 0, pm.peakInFlight));
    const slotsOk = counters.every((c, i) => Object.values(c.perModel).every((pm) => pm.peakInFlight <= s.hosts[i]!.numParallel));
    void result;
    return {
      scenario: s.name,
      strategy,
      makespan,
      ratio: makespan / s.lowerBound(t),
      loads: counters.reduce((n, c) => n + c.loads, 0),
      reloads: counters.reduce((n, c) => n + c.reloads, 0),
      peak: [...peaks.entries()]
        .filter(([m]) => m.startsWith('m'))
        .map(([m, p]) => `${m.split(':')[0]}:${p}`)
        .join(' '),
      slotsOk,
      cpuPerCall: (cpu.user + cpu.system) / 1000 / calls,
    };
  } finally {
    for (const x of sims) x.stop();
  }
}

const rows: Row[] = [];
const only = process.env.BENCH_SCENARIOS?.split(',');
const cal = await calibrate();
for (const s of scenarios.filter((x) => !only || only.includes(x.name))) {
  for (const strategy of ['sequential', 'unbounded', 'planned'] as Strategy[]) {
    rows.push(await runOne(s, strategy, cal));
    process.stderr.write(`  ${s.name} ${strategy} done\n`);
  }
}

const pad = (v: string, n: number): string => v.padEnd(n);
console.log(`Schedule benchmark: load ${LOAD_MS} ms, ${TOKEN_MS} ms per token, agent answers of ${WORDS} words, round 0 + ${ROUNDS} critique rounds, judge each round, synthesis`);
console.log(
  `Calibrated alone on an idle simulator: opening ${cal.opening.toFixed(0)} ms, critique ${cal.critique.toFixed(0)} ms, judge ${cal.judge.toFixed(0)} ms, synthesis ${cal.synthesis.toFixed(0)} ms, load ${cal.load.toFixed(0)} ms`,
);
for (const s of scenarios.filter((x) => !only || only.includes(x.name))) {
  console.log(`\n${s.name}: ${s.text}. Lower bound ${s.lowerBound(cal).toFixed(0)} ms, minimum loads ${s.minLoads}.`);
  console.log(`  ${pad('strategy', 11)}${pad('makespan', 11)}${pad('÷ bound', 9)}${pad('loads', 7)}${pad('reloads', 9)}${pad('peak in flight', 22)}${pad('≤ slots', 9)}CPU/call`);
  for (const r of rows.filter((x) => x.scenario === s.name)) {
    console.log(
      `  ${pad(r.strategy, 11)}${pad(`${r.makespan.toFixed(0)} ms`, 11)}${pad(r.ratio.toFixed(2), 9)}${pad(String(r.loads), 7)}${pad(String(r.reloads), 9)}${pad(r.peak, 22)}${pad(r.slotsOk ? 'yes' : 'NO', 9)}${r.cpuPerCall.toFixed(2)} ms`,
    );
  }
}
const planned = (name: string) => rows.find((r) => r.scenario === name && r.strategy === 'planned');
const s3 = planned('S3');
const s4 = planned('S4');
if (s3 && s4) console.log(`\nS4 (2 hosts) vs S3 (1 host), planned: ${(s3.makespan / s4.makespan).toFixed(2)}× faster`);
