import { createRun, executeBench, type BenchProgress } from '../../src/bench/runner.js';
import type { SuiteItem } from '../../src/bench/suite.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { type ItemScript, benchResponder } from '../helpers/bench-panel.js';
import { simModels, testPreset } from '../helpers/panel.js';

/**
 * Four number items, three agents, up to two critique rounds. Hand-worked
 * outcomes (✓ right, ✗ wrong):
 *
 * | item | round 0 (a b c) | later rounds       | exit           | r0 vote | final vote | synth | SC (k)        |
 * | i1   | 10 10 4         | –                  | converged @0   | 10 ✓    | 10 ✓       | 10 ✓  | 10 ✓ (3)      |
 * | i2   | 5 -5 3          | r1: -5 -5 3        | converged @1   | 5 ✗     | -5 ✓       | -5 ✓  | -5 ✓ (6)      |
 * | i3   | 7 7 7           | r1: 7 8 8          | converged @1   | 7 ✓     | 8 ✗        | 8 ✗   | 7 ✓ tie (6)   |
 * | i4   | 3 ∅ 2           | r1: 3 3 2; r2: 3 3 3 | max_rounds   | 3 ✓     | 3 ✓        | ∅ ✗   | 2 ✗ (9)       |
 *
 * Singles: a 10 5 7 3 (3/4), b 10 -5 7 ∅ (3/4, ∅ after one repair), c 4 3 7 2 (1/4).
 *
 * Self-correction (each agent revises its own round-0 answer once per critique turn it made;
 * no revision where the debate stopped at round 0), majority of the last answers:
 * i1 10 10 4 → 10 ✓; i2 5 -5 3 → 5 ✗ (tie, earliest); i3 7 7 7 → 7 ✓; i4 r1 3 3 2, r2 3 3 2 → 3 ✓ (3/4).
 */
export const items: SuiteItem[] = [
  { id: 'i1', question: 'Item one: what is 4+6?', answer: '10', kind: 'number' },
  { id: 'i2', question: 'Item two: what is 3-8?', answer: '-5', kind: 'number' },
  { id: 'i3', question: 'Item three: what is 2+5?', answer: '7', kind: 'number' },
  { id: 'i4', question: 'Item four: what is 9/3?', answer: '3', kind: 'number' },
];

export const scripts: Record<string, ItemScript> = {
  i1: { rounds: { a: ['10'], b: ['10'], c: ['4'] }, judge: [0.9], synth: '10', minority: [{ agent: 'c', round: 0 }], sc: ['10', '10', '4'] },
  i2: {
    rounds: { a: ['5', '-5'], b: ['-5'], c: ['3'] },
    judge: [0.2, 0.9],
    synth: '-5',
    minority: [
      { agent: 'c', round: 1 },
      { agent: 'a', round: 0 },
    ],
    sc: ['5', '-5', '3', '-5', '-5', '3'],
  },
  i3: { rounds: { a: ['7'], b: ['7', '8'], c: ['7', '8'] }, judge: [0.3, 0.95], synth: '8', minority: [{ agent: 'a', round: 1 }], sc: ['7', '8', '8', '7', '8', '7'] },
  i4: {
    rounds: { a: ['3'], b: [null, '3'], c: ['2', '2', '3'] },
    judge: [0.1, 0.1, 0.5],
    synth: null,
    single: { b: null },
    revise: { b: ['3'] },
    sc: ['3', '2', '2', '2', '3', '2', null, '2', '3'],
  },
};

export const agentIds = ['a', 'b', 'c'];

interface RunOpts {
  concurrency?: number;
  limit?: number;
  onProgress?: (p: BenchProgress) => void;
  signal?: AbortSignal;
}

export interface BenchSetup {
  sim: SimHandle;
  store: Store;
  seen: ReturnType<typeof benchResponder>['seen'];
  preset: ReturnType<typeof testPreset>;
  create(opts?: RunOpts): string;
  execute(runId: string, opts?: RunOpts): Promise<void>;
  start(opts?: RunOpts): Promise<string>;
  close(): Promise<void>;
}

export interface SetupOptions {
  preset?: Parameters<typeof testPreset>[1];
  items?: SuiteItem[];
  scripts?: Record<string, ItemScript>;
  agentIds?: string[];
  dbPath?: string;
  /** Sees every request first; a reply it returns replaces the scripted panel's. */
  onRequest?: (req: SimRequest) => SimReply | undefined | void;
  /** Slots per model on the simulated server (the bench itself is told 1). */
  serverSlots?: number;
  tokenMs?: number;
}

export async function setupBench(opts: SetupOptions = {}): Promise<BenchSetup> {
  const ids = opts.agentIds ?? agentIds;
  const suite = opts.items ?? items;
  const preset = testPreset(ids, { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 }, ...opts.preset });
  const panel = benchResponder(suite, opts.scripts ?? scripts, ids);
  const sim = await startSimulator({
    models: simModels(preset),
    respond: (req) => opts.onRequest?.(req) ?? panel.respond(req),
    ...(opts.serverSlots ? { numParallel: opts.serverSlots } : {}),
    ...(opts.tokenMs ? { tokenMs: opts.tokenMs } : {}),
  });
  const store = openStore(opts.dbPath ?? ':memory:');
  const setup: BenchSetup = {
    sim,
    store,
    seen: panel.seen,
    preset,
    create(opts = {}) {
      return createRun({
        store,
        suite: 'fixture',
        items: suite,
        presets: [{ preset, source: 'test' }],
        host: sim.url,
        seed: 0,
        ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
        ...(opts.limit ? { limit: opts.limit } : {}),
      });
    },
    async execute(runId, opts = {}) {
      await executeBench({ store, runId, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    },
    async start(opts = {}) {
      const runId = setup.create(opts);
      await setup.execute(runId, opts);
      return runId;
    },
    async close() {
      setup.store.close();
      await sim.close();
    },
  };
  return setup;
}
