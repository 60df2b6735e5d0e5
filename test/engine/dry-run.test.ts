import { afterEach, describe, expect, it } from 'vitest';
import { type AutoChoice, autoChoiceLabel, estimateBenchItem, estimateRun } from '../../src/engine/dry-run.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { loadPreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { agentOf, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import type { Advice } from '../../src/protocol/advice.js';
import type { Preset, ProtocolKind } from '../../src/config/preset-schema.js';

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

describe('the dry run of an auto run', () => {
  const autoPreset = (): Preset => testPreset(['a', 'b', 'c'], { protocol: { kind: 'auto', maxRounds: 3, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } as never });
  const as = (preset: Preset, kind: ProtocolKind, protocol: Partial<Preset['protocol']> = {}): Preset => ({ ...preset, protocol: { ...preset.protocol, kind, ...protocol } });
  const label = (choices: AutoChoice[], name: string): AutoChoice => choices.find((c) => autoChoiceLabel(c) === name)!;

  it('counts every protocol the advisor may pick, at each depth that changes it, each with the advisor call, and the dearest as the upper bound', () => {
    const preset = autoPreset();
    const q = 'Should we do A?';
    const estimate = estimateRun(preset, q, () => 1e9);
    const range = estimate.range!;
    expect(range.choices.map(autoChoiceLabel).sort()).toEqual(['debate on a deep question', 'debate on a shallow question', 'decompose on a deep question', 'decompose on a shallow question', 'delphi', 'parallel', 'tournament']);
    // Each choice is that protocol's own estimate and one advisor call; a shallow debate holds 2 critique rounds, a shallow decomposition 3 parts.
    const fixed = (p: Preset): number => estimateRun(p, q, () => 1e9).calls;
    expect(label(range.choices, 'parallel').calls).toBe(fixed(as(preset, 'parallel')) + 1);
    expect(label(range.choices, 'tournament').calls).toBe(fixed(as(preset, 'tournament')) + 1);
    expect(label(range.choices, 'delphi').calls).toBe(fixed(as(preset, 'delphi')) + 1);
    expect(label(range.choices, 'debate on a deep question').calls).toBe(fixed(as(preset, 'debate')) + 1);
    expect(label(range.choices, 'debate on a shallow question').calls).toBe(fixed(as(preset, 'debate', { maxRounds: 2 })) + 1);
    expect(label(range.choices, 'decompose on a shallow question').calls).toBe(fixed(as(preset, 'decompose', { maxSubQuestions: 3 })) + 1);
    expect(range.advisor).toMatchObject({ model: 'judge:1b', calls: 1, replyTokens: 400 });
    // Every size is known: the choices are ordered by time, the cheapest first.
    expect(range.rankedBy).toBe('time');
    const seconds = range.choices.map((c) => c.seconds!);
    expect(seconds).toEqual([...seconds].sort((x, y) => x - y));
    expect([range.cheapest, range.dearest]).toEqual([range.choices[0], range.choices.at(-1)]);
    expect(autoChoiceLabel(range.cheapest)).toBe('parallel');
    expect([estimate.protocol, estimate.calls, estimate.tokens, estimate.seconds]).toEqual(['auto', range.dearest.calls, range.dearest.tokens, range.dearest.seconds]);
    expect(estimate.groups[0]).toBe(range.advisor);
    expect(estimate.notes[0]).toBe(
      "The advisor (judge:1b) picks the protocol when the run starts, from its reading of the question, so no dry run can know which: for test-panel it may pick debate, parallel, tournament, decompose or delphi. Each figure counts the advisor's own call.",
    );
    expect(estimate.notes.join('\n')).not.toContain('not estimated');
  });

  it('orders the choices by tokens when a model has no known size, and names that model', () => {
    const estimate = estimateRun(autoPreset(), 'Should we do A?', (m) => (m === 'judge:1b' ? null : 1e9));
    const range = estimate.range!;
    expect(range.rankedBy).toBe('tokens');
    const tokens = range.choices.map((c) => c.tokens);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(estimate.notes.filter((n) => n.startsWith('No size is known'))).toEqual(['No size is known for judge:1b: their calls are left out of the time.']);
  });

  it('offers a pipeline to a panel with roles, and never an Oxford debate', () => {
    const preset = autoPreset();
    const roles = { ...preset, agents: preset.agents.map((a, i) => ({ ...a, role: i === 0 ? ('lead' as const) : ('reviewer' as const) })) };
    const kinds = new Set(estimateRun(roles, 'Is this change safe?', () => 1e9).range!.choices.map((c) => c.protocol));
    expect(kinds.has('pipeline')).toBe(true);
    expect(kinds.has('oxford')).toBe(false);
    expect(estimateRun(preset, 'Q?', () => 1e9).range!.choices.some((c) => c.protocol === 'pipeline')).toBe(false);
  });

  it('counts a bench item of an auto preset as its dearest choice with the advisor call, where it counted nothing', () => {
    const preset = autoPreset();
    const estimate = estimateBenchItem(preset, 'Should we do A?', () => 1e9);
    const dearest = estimate.range!.dearest;
    expect(estimate.calls).toBe(dearest.calls);
    const depth = dearest.depth === 'shallow' ? (dearest.protocol === 'debate' ? { maxRounds: 2 } : { maxSubQuestions: 3 }) : {};
    expect(dearest.calls).toBe(estimateBenchItem(as(preset, dearest.protocol, depth), 'Should we do A?', () => 1e9).calls + 1);
    expect(estimate.groups.some((g) => g.what.startsWith('baseline: '))).toBe(true);
  });

  const isAdvice = (req: SimRequest): boolean => 'parts' in ((req.format as { properties?: object } | null)?.properties ?? {});
  it.each<[string, Pick<Advice, 'mode' | 'depth' | 'pattern'>]>([
    ['parallel', { mode: 'query', depth: 'shallow', pattern: 'single-domain' }],
    ['debate on a shallow question', { mode: 'analyze', depth: 'shallow', pattern: 'multi-domain' }],
    ['debate on a deep question', { mode: 'analyze', depth: 'deep', pattern: 'multi-domain' }],
  ])('counts as many calls as the run makes when the advisor picks %s', async (name, classified) => {
    const preset = autoPreset();
    const choice = label(estimateRun(preset, 'Should we do A?', () => 1e9).range!.choices, name);
    const advice = JSON.stringify({ domains: [], parts: 'one', reason: 'r', ...classified });
    // Scores below the threshold: the debate holds every round it may.
    const sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.1], (req) => (isAdvice(req) ? advice : undefined)).respond, tokenMs: 0 });
    const store = openStore(':memory:');
    try {
      const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
      expect(result.status).toBe('completed');
      const made = store.getDebate(result.id).calls.filter((c) => c.attempt === 0);
      expect(made[0]!.stage).toBe('advice');
      expect(made.length).toBe(choice.calls);
    } finally {
      store.close();
      await sim.close();
    }
  });
});
