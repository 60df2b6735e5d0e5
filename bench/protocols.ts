import { presetSchema } from '../src/config/preset-schema.js';
import { median } from '../src/bench/stats.js';
import { recorder } from '../src/engine/recorder.js';
import { runDebate } from '../src/engine/run-debate.js';
import { demoResponder } from '../src/sim/demo.js';
import { startSimulator } from '../src/sim/index.js';
import { openStore } from '../src/store/open.js';

/**
 * Calls and wall time per protocol against the simulator playing the scripted demo panel
 * (agents start apart and converge by round 2; the judge favours the conditional answer).
 * A pipeline seats a lead, an analyst and reviewers, and the synthesizer filters.
 * Each agent has its own model, so a round's calls run side by side. Judge and synthesizer
 * are separate small models. Figures: calls for 3, 4 and 8 agents at 0 ms per token, then
 * wall time at 20 ms per token (median of BENCH_RUNS runs, default 3).
 *
 * A row is a label and the `protocol` block it sets over the common one (maxRounds 4,
 * threshold 0.85), so a debate setting is benched as a row of its own beside plain debate.
 */

interface Row {
  label: string;
  protocol: Record<string, unknown> & { kind: string };
  /** The call count for n agents as a formula, printed for 4. */
  formula: (n: number) => string;
  /** Whether the wall-time section runs it too. */
  timed: boolean;
}

const ROWS: Row[] = [
  { label: 'parallel', protocol: { kind: 'parallel' }, formula: (n) => `n + 1 = ${n + 1}`, timed: true },
  { label: 'debate', protocol: { kind: 'debate' }, formula: (n) => `(n + 1) per round + 1 = ${n + 1} × rounds + 1`, timed: true },
  { label: 'advocate', protocol: { kind: 'debate', advocate: true }, formula: (n) => `as debate: ${n + 1} × rounds + 1`, timed: true },
  {
    label: 'anti-conformity',
    protocol: { kind: 'debate', critique: 'anti-conformity', decision: 'trajectory', earlyExit: false },
    formula: (n) => `every round runs: ${n + 1} × (maxRounds + 1) + 1`,
    timed: true,
  },
  { label: 'tournament', protocol: { kind: 'tournament' }, formula: (n) => `n + 2(n − 1) + (n − 1) + 1 = ${4 * n - 2}`, timed: true },
  { label: 'decompose', protocol: { kind: 'decompose' }, formula: () => '1 + sub-questions + 1', timed: false },
  { label: 'pipeline', protocol: { kind: 'pipeline' }, formula: (n) => `n + 1 (the synthesizer filters) = ${n + 1}`, timed: true },
  // The demo's question is numeric, so no judge: n per round until the spread holds, then the synthesis.
  { label: 'delphi', protocol: { kind: 'delphi' }, formula: (n) => `n per round + 1 = ${n} × rounds + 1`, timed: true },
  { label: 'oxford', protocol: { kind: 'oxford' }, formula: (n) => `3n speeches + verdict + synthesis = ${3 * n + 2}`, timed: true },
];

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const TOKEN_MS = Number(process.env.BENCH_TOKEN_MS ?? 20);
const QUESTION = 'Should we migrate this tool from SQLite to Postgres now?';
const PERSONAS = ['You are a pragmatic engineer.', 'You are an architect who plans ahead.', 'You are a sceptical reviewer.'];
const WIDTH = Math.max(...ROWS.map((r) => r.label.length)) + 1;

function presetFor(row: Row, n: number) {
  const kind = row.protocol.kind;
  return presetSchema.parse({
    name: `bench-${row.label}-${n}`,
    agents: Array.from({ length: n }, (_, i) => ({ id: `agent${i}`, model: `panel-${i}:7b`, persona: `${PERSONAS[i % PERSONAS.length]} (seat ${i})`, ...(kind === 'pipeline' ? { role: pipelineRole(i) } : {}) })),
    judge: { model: 'judge:3b' },
    synthesizer: { model: 'synth:9b' },
    protocol: { maxRounds: 4, convergenceThreshold: 0.85, callTimeoutSeconds: 120, ...row.protocol },
  });
}

/** A pipeline's seats: a lead, an analyst, then reviewers; the synthesizer model filters. */
function pipelineRole(seat: number): 'lead' | 'analyst' | 'reviewer' {
  return seat === 0 ? 'lead' : seat === 1 ? 'analyst' : 'reviewer';
}

async function runOnce(row: Row, n: number, tokenMs: number): Promise<{ calls: number; ms: number; status: string }> {
  const preset = presetFor(row, n);
  const models = [...new Set([...preset.agents.map((a) => a.model), 'judge:3b', 'synth:9b'])].map((name) => ({ name, sizeBytes: 4e9, contextLength: 32768 }));
  const sim = await startSimulator({ models, respond: demoResponder(preset), tokenMs, vramBytes: 200 * 2 ** 30, maxLoadedModels: 20 });
  const store = openStore(':memory:');
  try {
    const t0 = performance.now();
    const result = await runDebate({ question: QUESTION, preset, host: sim.url, recorder: recorder(store), vramGiB: 200 });
    const ms = performance.now() - t0;
    return { calls: store.getDebate(result.id).calls.length, ms, status: result.status };
  } finally {
    store.close();
    await sim.close();
  }
}

console.log('Calls per protocol (demo panel: the debate converges after critique round 2; decompose splits into 3 parts)');
console.log(`  ${'protocol'.padEnd(WIDTH)} ${[3, 4, 8].map((n) => `${n} agents`.padStart(9)).join(' ')}   formula`);
for (const row of ROWS) {
  const counts: number[] = [];
  for (const n of [3, 4, 8]) counts.push((await runOnce(row, n, 0)).calls);
  console.log(`  ${row.label.padEnd(WIDTH)} ${counts.map((c) => String(c).padStart(9)).join(' ')}   ${row.formula(4)} for 4`);
}

console.log(`\nWall time at ${TOKEN_MS} ms per token, 4 agents, median of ${RUNS} runs`);
for (const row of ROWS.filter((r) => r.timed)) {
  const times: number[] = [];
  let calls = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await runOnce(row, 4, TOKEN_MS);
    if (r.status !== 'completed') throw new Error(`${row.label} ended ${r.status}`);
    times.push(r.ms);
    calls = r.calls;
  }
  console.log(`  ${row.label.padEnd(WIDTH)} ${(median(times) / 1000).toFixed(2).padStart(7)} s   (${calls} calls; min ${(Math.min(...times) / 1000).toFixed(2)}, max ${(Math.max(...times) / 1000).toFixed(2)})`);
}
