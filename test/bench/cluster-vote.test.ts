import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchReport, buildReport } from '../../src/bench/report.js';
import type { SuiteItem } from '../../src/bench/suite.js';
import { type BenchData, loadBenchData } from '../../src/store/bench.js';
import type { ItemScript } from '../helpers/bench-panel.js';
import { type BenchSetup, setupBench } from './fixture.js';

/**
 * Four agents in two clusters (a, b: x; c, d: y), one round each.
 * v1: 10 10 10 4, voters back their own answer: a and b reach Consensus, a wins (10 ✓).
 * v2: 9 9 7 9, everyone endorses only 7: c wins with full Consensus (7 ✓) while the majority says 9 ✗.
 */
const items: SuiteItem[] = [
  { id: 'v1', question: 'Vote item one: what is 5+5?', answer: '10', kind: 'number' },
  { id: 'v2', question: 'Vote item two: what is 14/2?', answer: '7', kind: 'number' },
];
const scripts: Record<string, ItemScript> = {
  v1: { rounds: { a: ['10'], b: ['10'], c: ['10'], d: ['4'] }, judge: [0.9], synth: '10' },
  v2: { rounds: { a: ['9'], b: ['9'], c: ['7'], d: ['9'] }, judge: [0.9], synth: '9', voteYes: ['7'] },
};

let bench: BenchSetup;
let data: BenchData;
let report: BenchReport;

beforeAll(async () => {
  const agentIds = ['a', 'b', 'c', 'd'];
  bench = await setupBench({
    items,
    scripts,
    agentIds,
    preset: {
      agents: agentIds.map((id, i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.`, cluster: i < 2 ? 'x' : 'y' })),
      voting: {},
    },
  });
  const runId = await bench.start();
  data = loadBenchData(bench.store, runId);
  report = buildReport(data);
});

afterAll(async () => {
  await bench?.close();
});

describe('the cluster vote condition', () => {
  it('takes the top position of the cluster approval vote as the answer', () => {
    const answers = data.trials.map((t) => t.results.find((r) => r.condition === 'cluster-vote')!);
    expect(answers.map((r) => [r.available, r.answer, r.correct, r.note])).toEqual([
      [true, '10', true, 'winner: a'],
      [true, '7', true, 'winner: c'],
    ]);
    const vote = report.conditions.find((c) => c.condition === 'cluster-vote')!;
    expect(vote).toMatchObject({ available: true, correct: 2, n: 2, accuracy: 1 });
    expect(report.conditions.find((c) => c.condition === 'debate-vote')).toMatchObject({ correct: 1, n: 2 });
  });

  it('charges the cluster vote for the debate and its 12 ballots, but not the synthesis', () => {
    const vote = report.conditions.find((c) => c.condition === 'cluster-vote')!;
    // 4 openings + 1 judge call + 4 positions × 3 voters.
    expect(vote.callsPerItem).toBe(17);
    expect(report.conditions.find((c) => c.condition === 'debate-vote')!.callsPerItem).toBe(5);
    expect(report.conditions.find((c) => c.condition === 'debate-synth')!.callsPerItem).toBe(18);
  });

  it('pairs the cluster vote against self-consistency in the differences', () => {
    expect(report.differences.some((d) => d.a === 'debate + cluster vote' && d.b === 'self-consistency@k')).toBe(true);
  });
});
