import { afterEach, describe, expect, it } from 'vitest';
import { estimateBenchItem, estimateRun } from '../../src/engine/dry-run.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { loadPreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { agentOf, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

describe('the dry run of a debate with a targeted exchange', () => {
  it('counts the exchange at the panel model that weighs most, since which two agents clash worst is not known yet', () => {
    const preset = testPreset(['a', 'b', 'c'], { tensions: {} });
    expect(preset.tensions?.round2.enabled).toBe(true);
    const sizes: Record<string, number> = { 'model-0:1b': 1, 'model-1:1b': 9, 'model-2:1b': 4 };
    const estimate = estimateRun(preset, 'Should we do A?', (m) => sizes[m] ?? null);
    const exchange = estimate.groups.find((g) => g.what.startsWith('targeted exchange'))!;
    expect(exchange).toMatchObject({ what: 'targeted exchange: the two agents of the worst clash', model: 'model-1:1b', calls: 2 });
  });
});

describe('the dry run of a tournament', () => {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** Openings with distinct confidences, so the seeding (and any bye) is known. */
  const seeded = (req: SimRequest): SimReply | undefined => {
    const agent = agentOf(req)!;
    if (stageOf(req) === 'opening') return JSON.stringify({ position: `${agent}-r0`, reasoning: `${agent} reasons`, confidence: 90 - (agent.charCodeAt(0) - 97) * 10 });
    if (stageOf(req) === 'critique') return reply.critique(agent, `${agent}-r${roundOf(req)}`);
    return undefined;
  };

  it.each([3, 4, 5])('counts the calls a tournament of %i agents then makes: round 0, two critiques and a verdict per match, the synthesis', async (n) => {
    const ids = ['a', 'b', 'c', 'd', 'e'].slice(0, n);
    const preset = testPreset(ids, { protocol: { kind: 'tournament', callTimeoutSeconds: 10 } as never });
    const estimate = estimateRun(preset, 'Should we do A?', () => 1e9);
    expect(estimate.notes.join()).not.toContain('not estimated');
    const sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.2], seeded).respond });
    closers.push(() => sim.close());
    const store = openStore(':memory:');
    closers.push(() => store.close());
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
    expect(result.status).toBe('completed');
    const made = store.getDebate(result.id).calls.filter((c) => c.attempt === 0);
    expect(estimate.calls).toBe(made.length);
    const critiques = estimate.groups.filter((g) => g.what.startsWith('match critiques')).reduce((s, g) => s + g.calls, 0);
    expect(critiques).toBe(made.filter((c) => c.stage === 'critique').length);
  });
});

describe('the dry run of a review pipeline', () => {
  it('counts the calls the shipped code-review preset then makes: the plan, the observations, each review, the map over the reviews, the report', async () => {
    const { preset } = loadPreset('code-review', process.cwd());
    const estimate = estimateRun(preset, 'Review this change', () => 1e9);
    expect(estimate.notes.join()).not.toContain('not estimated');
    const sim = await startSimulator({ models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 0 });
    const store = openStore(':memory:');
    try {
      const result = await runDebate({ question: 'Review this change', preset, host: sim.url, recorder: recorder(store) });
      expect(result.status).toBe('completed');
      const made = store.getDebate(result.id).calls.filter((c) => c.attempt === 0);
      expect([estimate.calls, made.length]).toEqual([9, 9]);
    } finally {
      store.close();
      await sim.close();
    }
  });

  it('counts no map over a single review', () => {
    const { preset } = loadPreset('code-review', process.cwd());
    const one = { ...preset, agents: preset.agents.filter((a) => a.id !== 'operations') };
    expect(estimateRun(one, 'Review this change', () => 1e9).groups.some((g) => g.what.startsWith('tension map'))).toBe(false);
  });
});

describe('the dry run of a decomposition', () => {
  const run = async (preset: ReturnType<typeof loadPreset>['preset']) => {
    const sim = await startSimulator({ models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 0 });
    const store = openStore(':memory:');
    try {
      const result = await runDebate({ question: 'Should we move to Postgres?', preset, host: sim.url, recorder: recorder(store) });
      expect(result.status).toBe('completed');
      return store.getDebate(result.id).calls.filter((c) => c.attempt === 0);
    } finally {
      store.close();
      await sim.close();
    }
  };

  it('counts the split, each part at its assignee, a fallback per part, the reassembly, and says the count rests on the split', async () => {
    const { preset: shipped } = loadPreset('decompose', process.cwd());
    // The simulated decomposer splits the question into three parts: the preset allows just those.
    const preset = { ...shipped, protocol: { ...shipped.protocol, maxSubQuestions: 3 }, tensions: undefined };
    const estimate = estimateRun(preset, 'Should we move to Postgres?', () => 1e9);
    expect(estimate.notes.join()).not.toContain('not estimated');
    expect(estimate.groups.map((g) => [g.what, g.calls])).toEqual([
      ['architect: the split', 1],
      ['pragmatist: sub-answers', 2],
      ['skeptic: sub-answers', 1],
      ['architect: fallback analyses, one per failed part', 3],
      ['architect: the reassembly', 1],
    ]);
    expect(estimate.notes).toContain("Calls depend on the decomposer's split: from 3 (one sub-question, answered) to 8 (all 3 sub-questions of protocol.maxSubQuestions, each failing and rewritten by architect); 5 when no part fails.");
    const made = await run(preset);
    expect(made.length).toBe(5);
    expect(made.filter((c) => c.stage === 'subanswer').map((c) => c.agentId).sort()).toEqual(['pragmatist', 'pragmatist', 'skeptic']);
  });

  it('bounds the calls of the shipped preset, which maps the clashes between the parts', async () => {
    const { preset } = loadPreset('decompose', process.cwd());
    const estimate = estimateRun(preset, 'Should we move to Postgres?', () => 1e9);
    expect(estimate.groups.some((g) => g.what.startsWith('tension map'))).toBe(true);
    const made = await run(preset);
    expect(made.some((c) => c.stage === 'clash')).toBe(true);
    const fallbacks = estimate.groups.find((g) => g.what.includes('fallback'))!.calls;
    expect(made.length).toBeLessThanOrEqual(estimate.calls - fallbacks);
  });
});

describe('the dry run of a bench item of a decomposition', () => {
  it('draws as many self-consistency samples as parts and fallbacks, and counts no parallel baseline, which a decomposition has not', () => {
    const { preset } = loadPreset('decompose', process.cwd());
    const estimate = estimateBenchItem(preset, 'Should we move to Postgres?', () => 1e9);
    const calls = (what: string): number => estimate.groups.filter((g) => g.what.endsWith(what)).reduce((s, g) => s + g.calls, 0);
    expect(calls('baseline: self-consistency')).toBe(calls(': sub-answers') + calls('one per failed part'));
    expect(calls('baseline: self-consistency')).toBe(10);
    expect(estimate.groups.some((g) => g.what === 'baseline: parallel synthesis')).toBe(false);
  });
});
