import { describe, expect, it } from 'vitest';
import { allRules } from '../../src/rules/index.js';
import { freeMadScores } from '../../src/rules/aggregation.js';
import { judgedIdsOf, normalisedStancesOf, stancesOf, votesFromStances } from '../../src/rules/stances.js';
import type { CallCost, Decision, Recorded, Trajectory, Vote } from '../../src/rules/trajectory.js';

const AGENTS = ['a', 'b', 'c'];
const v = (text: string | null): Vote | null => (text === null ? null : { key: text, text });

interface Spec {
  rounds: (string | null)[][];
  convergence?: (number | null)[];
  maxRounds?: number;
  threshold?: number;
  exitReason?: string;
  protocol?: string;
  synthesis?: Recorded;
  clusterVote?: Recorded;
  reliability?: Record<string, number>;
  basis?: Trajectory['basis'];
  agents?: string[];
}

/**
 * Every agent turn costs 100 + 10 tokens and 1 s, every judge call 50 + 5 tokens and 0.5 s,
 * the synthesis 200 + 20 tokens and 2 s: spend can be read off by hand.
 */
function trajectory(spec: Spec): Trajectory {
  const agents = spec.agents ?? AGENTS;
  const calls: CallCost[] = [];
  spec.rounds.forEach((_, r) => {
    for (const id of agents) calls.push({ stage: r === 0 ? 'opening' : 'critique', round: r, agentId: id, promptTokens: 100, completionTokens: 10, gpuMs: 1000 });
    calls.push({ stage: 'judge', round: r, agentId: 'judge', promptTokens: 50, completionTokens: 5, gpuMs: 500 });
  });
  calls.push({ stage: 'synthesis', round: spec.rounds.length - 1, agentId: 'synthesizer', promptTokens: 200, completionTokens: 20, gpuMs: 2000 });
  return {
    agents,
    protocol: spec.protocol ?? 'debate',
    maxRounds: spec.maxRounds ?? 2,
    threshold: spec.threshold ?? 0.85,
    rounds: spec.rounds.map((votes, r) => ({ round: r, votes: votes.map(v), convergence: spec.convergence?.[r] ?? null })),
    status: 'completed',
    exitReason: spec.exitReason ?? 'max_rounds',
    basis: spec.basis ?? { kind: 'answers' },
    synthesis: spec.synthesis ?? { recorded: true, vote: v('9'), note: null },
    clusterVote: spec.clusterVote ?? { recorded: false, why: 'the preset has no voting block' },
    calls,
    ...(spec.reliability ? { reliability: spec.reliability } : {}),
  };
}

function decide(name: string, t: Trajectory): Decision {
  const rule = allRules({ maxRounds: t.maxRounds }).find((r) => r.name === name);
  if (!rule) throw new Error(`no rule ${name}`);
  return rule.decide(t);
}

function decided(name: string, t: Trajectory): Extract<Decision, { available: true }> {
  const d = decide(name, t);
  if (!d.available) throw new Error(`${name} unavailable: ${d.why}`);
  return d;
}

// Three agents, two critique rounds, all of them run: 5 5 7 → 5 7 7 → 7 7 7.
const full = trajectory({ rounds: [['5', '5', '7'], ['5', '7', '7'], ['7', '7', '7']], convergence: [0.5, 0.72, 0.9] });
// The judge stopped after round 1 (0.9 ≥ 0.85) of at most 3.
const early = trajectory({ rounds: [['5', '5', '7'], ['7', '7', '7']], convergence: [0.4, 0.9], maxRounds: 3, exitReason: 'converged' });

describe('stopping rules', () => {
  it('reads the run as recorded: the last round\'s majority, every call but the synthesis', () => {
    const d = decided('stop:recorded', full);
    expect(d.stopRound).toBe(2);
    expect(d.vote?.text).toBe('7');
    expect(d.spent).toEqual({ calls: 12, promptTokens: 1050, completionTokens: 105, gpuSeconds: 10.5 });
  });

  it('stops at the first round whose convergence reaches a swept threshold, charging the judge through that round', () => {
    const d = decided('stop:threshold@0.70', full);
    expect(d.stopRound).toBe(1);
    expect(d.vote?.text).toBe('7');
    expect(d.spent).toEqual({ calls: 8, promptTokens: 700, completionTokens: 70, gpuSeconds: 7 });
    expect(decided('stop:threshold@0.60', full).stopRound).toBe(1);
  });

  it('stops at the ceiling when no round reaches the threshold, and says so', () => {
    const d = decided('stop:threshold@0.95', full);
    expect(d.stopRound).toBe(2);
    expect(d.note).toMatch(/not met by round 2/);
  });

  it('does not guess a round the judge stopped before: a higher threshold on an early exit is unavailable', () => {
    const d = decide('stop:threshold@0.95', early);
    expect(d).toEqual({ available: false, why: 'needs round 2, which never ran: the debate stopped after round 1 (converged)' });
    expect(decided('stop:threshold@0.60', early).stopRound).toBe(1);
  });

  it("does not stop on a score whose own stances split the panel, as the engine does not, but reads graded answers by the score alone", () => {
    // Round 0's judge scored 0.9 while its stances put the three agents apart; round 1 has a majority.
    const spec = { rounds: [['5', '6', '7'], ['7', '7', '5']], convergence: [0.9, 0.9], maxRounds: 3 };
    expect(decided('stop:threshold@0.85', trajectory({ ...spec, basis: { kind: 'stances' } })).stopRound).toBe(1);
    expect(decided('stop:threshold@0.85', trajectory(spec)).stopRound).toBe(0);
  });

  it('runs a fixed number of critique rounds without the judge, and is unavailable past the last recorded round', () => {
    const zero = decided('stop:rounds=0', full);
    expect(zero.stopRound).toBe(0);
    expect(zero.vote?.text).toBe('5');
    expect(zero.spent).toEqual({ calls: 3, promptTokens: 300, completionTokens: 30, gpuSeconds: 3 });
    expect(decided('stop:rounds=2', full).spent.calls).toBe(9);
    expect(decide('stop:rounds=3', early)).toMatchObject({ available: false, why: expect.stringMatching(/^needs round 2, which never ran/) });
  });

  it('charges the clash board mapped on round 0 to the rounds after it, or to round 0 when the debate drew its map there', () => {
    // Claims (a's failed, then repaired) and one clash batch on round 0's answers, 10 + 1 tokens and 0.1 s each.
    const board = (t: Trajectory): Trajectory => ({
      ...t,
      calls: [
        ...t.calls,
        ...[['claims', 'a'], ['claims', 'a'], ['claims', 'b'], ['claims', 'c'], ['clash', 'clash-1']].map(([stage, agentId]) => ({ stage: stage!, round: 0, agentId: agentId!, promptTokens: 10, completionTokens: 1, gpuMs: 100 })),
        { stage: 'clash', round: t.rounds.length - 1, agentId: 'tension-map', promptTokens: 10, completionTokens: 1, gpuMs: 100 },
      ],
    });
    const mapped = board(full);
    expect(decided('stop:rounds=0', mapped).spent).toEqual(decided('stop:rounds=0', full).spent);
    expect(decided('stop:rounds=1', mapped).spent.calls).toBe(decided('stop:rounds=1', full).spent.calls + 5);
    expect(decided('stop:rounds=2', mapped).spent.calls).toBe(decided('stop:rounds=2', full).spent.calls + 6);
    const stoppedAt0 = board(trajectory({ rounds: [['5', '5', '5']], convergence: [0.9], exitReason: 'converged' }));
    expect(decided('stop:rounds=0', stoppedAt0).spent.calls).toBe(3 + 6);
    expect(decided('stop:rounds=0', stoppedAt0).spent.calls + 1).toBe(decided('stop:recorded', stoppedAt0).spent.calls);
  });

  it('stops at the first unanimous round; a missing answer is not agreement', () => {
    expect(decided('stop:unanimous', full).stopRound).toBe(2);
    const gap = trajectory({ rounds: [['5', '5', null], ['5', '5', '5']], maxRounds: 1 });
    expect(decided('stop:unanimous', gap).stopRound).toBe(1);
    const never = trajectory({ rounds: [['5', '6', '7'], ['5', '6', '6']], maxRounds: 1 });
    const d = decided('stop:unanimous', never);
    expect(d.stopRound).toBe(1);
    expect(d.note).toMatch(/unanimity not met/);
  });

  it('stops at the first round whose leader holds more than half the panel, counting missing answers against it', () => {
    expect(decided('stop:settled', full).stopRound).toBe(0);
    const split = trajectory({ rounds: [['5', null, '7'], ['5', '5', null]], maxRounds: 1 });
    const d = decided('stop:settled', split);
    expect(d.stopRound).toBe(1);
    expect(d.vote?.text).toBe('5');
  });

  it('does not apply critique-round stops to a protocol without them', () => {
    const parallel = trajectory({ rounds: [['5', '5', '7']], protocol: 'parallel' });
    expect(decide('stop:rounds=1', parallel)).toMatchObject({ available: false, why: expect.stringContaining('parallel') });
  });
});

describe('aggregation rules', () => {
  it('takes the synthesizer\'s answer where one was recorded, at the cost of every call', () => {
    const d = decided('synthesizer', full);
    expect(d.vote?.text).toBe('9');
    expect(d.spent.calls).toBe(13);
    const none = trajectory({ rounds: [['5', '5', '7']], synthesis: { recorded: false, why: 'no synthesis recorded' } });
    expect(decide('synthesizer', none)).toEqual({ available: false, why: 'no synthesis recorded' });
  });

  it('counts the final round, round 0, or round r (a debate that stopped earlier read where it stopped)', () => {
    expect(decided('majority:final', full).vote?.text).toBe('7');
    const r0 = decided('majority:round0', full);
    expect(r0.vote?.text).toBe('5');
    expect(r0.spent.calls).toBe(3);
    expect(decided('majority:round=1', full).vote?.text).toBe('7');
    const capped = decided('majority:round=3', early);
    expect(capped.stopRound).toBe(1);
    expect(capped.note).toMatch(/stopped after round 1/);
  });

  it('breaks a tie toward the answer voted first, and ignores missing and unreadable answers', () => {
    const tie = trajectory({ rounds: [['8', '7', null]], maxRounds: 0 });
    expect(decided('majority:round0', tie).vote?.text).toBe('8');
    const later = trajectory({ rounds: [[null, '7', '8']], maxRounds: 0 });
    expect(decided('majority:round0', later).vote?.text).toBe('7');
  });

  it('decides nothing, and counts as wrong, when no answer could be read', () => {
    const unread = trajectory({ rounds: [[null, null, null]], maxRounds: 0 });
    const d = decided('majority:final', unread);
    expect(d.vote).toBeNull();
  });

  it('says a round-0 majority does not apply to protocols without independent answers', () => {
    const pipeline = trajectory({ rounds: [['5', '5', '7']], protocol: 'pipeline' });
    expect(decide('majority:round0', pipeline)).toEqual({ available: false, why: 'a review pipeline has no independent answers' });
  });

  it('scores the trajectory as Free-MAD does: rounds weigh 1/(r+1), and joining the previous majority counts half', () => {
    // Round 0: 5 5 7 → 5: 40, 7: 20. Round 1 (×½): a keeps 5 (+10); b leaves 5 (−12.5) for 7, not the majority (+15); c keeps 7 (+10).
    // Round 2 (×⅓): the majority before is 7; a leaves 5 (−8.33) and joins it (+5); b and c keep 7 (+6.67 each).
    const scores = freeMadScores(full);
    expect(scores.get('5')!.score).toBeCloseTo(40 + 10 - 12.5 - 25 / 3, 6);
    expect(scores.get('7')!.score).toBeCloseTo(20 + 15 + 10 + 5 + 20 / 3 + 20 / 3, 6);
    expect(decided('free-mad', full).vote?.text).toBe('7');
  });

  it('lets Free-MAD keep an answer held early and long against a late switch', () => {
    // 5 5 7 → 7 7 7 with no further round: 5 scores 40 − 25 = 15, 7 scores 20 + 15 + 15 + 10 = 60.
    const flip = trajectory({ rounds: [['5', '5', '7'], ['7', '7', '7']], maxRounds: 1 });
    expect(decided('free-mad', flip).vote?.text).toBe('7');
    // Held by two through two rounds, left by one only at the end: 4 stays ahead although the last round is split 4 9 9.
    const held = trajectory({ rounds: [['4', '4', '9'], ['4', '4', '9'], ['4', '9', '9']] });
    expect(decided('majority:final', held).vote?.text).toBe('9');
    expect(decided('free-mad', held).vote?.text).toBe('4');
  });

  it('gives a turn with no readable answer no points, and counts a return after it as a move', () => {
    const gap = trajectory({ rounds: [['5', '6', '6'], [null, '6', '6'], ['6', '6', '6']] });
    const scores = freeMadScores(gap);
    // a: 5 at round 0 (+20), nothing at round 1, then leaves 5 (−8.33) for 6, the previous majority (+5).
    expect(scores.get('5')!.score).toBeCloseTo(20 - 25 / 3, 6);
  });

  it('takes the cluster vote where recorded and says why not otherwise', () => {
    const voted = trajectory({ rounds: [['5', '5', '7']], clusterVote: { recorded: true, vote: v('7'), note: 'winner: c' } });
    const d = decided('cluster-vote', voted);
    expect(d.vote?.text).toBe('7');
    expect(d.spent.calls).toBe(4);
    expect(decide('cluster-vote', full)).toEqual({ available: false, why: 'the preset has no voting block' });
  });
});

describe('early majority over round 0', () => {
  it('stops calling agents in panel order once the leader cannot be overturned', () => {
    const d = decided('ems:panel', full);
    expect(d.vote?.text).toBe('5');
    expect(d.spent.calls).toBe(2);
    expect(d.note).toBe('2 of 3 agents called');
  });

  it('calls everyone when the last answer could still change the outcome, and breaks the tie as the majority does', () => {
    const split = trajectory({ rounds: [['5', '7', '5']], maxRounds: 0 });
    expect(decided('ems:panel', split)).toMatchObject({ vote: { text: '5' }, note: '3 of 3 agents called' });
    const tie = trajectory({ rounds: [['5', '7']], agents: ['a', 'b'], maxRounds: 0 });
    expect(decided('ems:panel', tie).vote?.text).toBe('5');
  });

  it('counts a missing answer as a call made with no vote', () => {
    const gap = trajectory({ rounds: [[null, '7', '7']], maxRounds: 0 });
    expect(decided('ems:panel', gap)).toMatchObject({ vote: { text: '7' }, note: '3 of 3 agents called' });
  });

  it('asks the most reliable agents first when the run measured them, charging only their openings', () => {
    const t = trajectory({ rounds: [['7', '5', '5']], maxRounds: 0, reliability: { a: 0.1, b: 0.9, c: 0.8 } });
    const d = decided('ems:reliability', t);
    expect(d.vote?.text).toBe('5');
    expect(d.spent.calls).toBe(2);
    expect(decided('ems:panel', t).spent.calls).toBe(3);
    expect(decided('ems:reliability', trajectory({ rounds: [['7', '5', '5']], maxRounds: 0 })).note).toMatch(/no earlier items/);
  });
});

describe('open questions', () => {
  const judgeReply = {
    recommendation: 0.8,
    facts: 0.7,
    caveats: 0.6,
    rationale: 'two camps',
    stances: [
      { id: 's1', summary: 'Use Postgres', agents: ['a', 'b'] },
      { id: 's2', summary: 'Use SQLite', agents: ['c'] },
    ],
  };

  it('reads stances from a judge reply and none from a reply without them', () => {
    expect(stancesOf(judgeReply)).toHaveLength(2);
    expect(stancesOf({ recommendation: 0.8 })).toBeNull();
    expect(stancesOf('not an object')).toBeNull();
  });

  it('gives each agent the stance that names it, and no vote to one named twice or not at all', () => {
    const stances = [...stancesOf(judgeReply)!, { id: 's3', summary: 'Either', agents: ['b'] }];
    expect(votesFromStances(['a', 'b', 'c', 'd'], stances)).toEqual([{ key: 's1', text: 'Use Postgres' }, null, { key: 's2', text: 'Use SQLite' }, null]);
  });

  it('normalises a reply as the engine does: a repeated id renamed, an agent named twice kept in its first, one left out given its own', () => {
    const reply = {
      stances: [
        { id: 'S1', summary: 'Postgres', agents: ['a', 'b'] },
        { id: 'S1', summary: 'SQLite', agents: ['b', 'c'] },
      ],
    };
    expect(normalisedStancesOf(reply, ['a', 'b', 'c', 'd'])).toEqual([
      { id: 'S1', summary: 'Postgres', agents: ['a', 'b'] },
      { id: 'S1-2', summary: 'SQLite', agents: ['c'] },
      { id: 'unplaced-d', summary: 'not placed by the judge', agents: ['d'] },
    ]);
    expect(votesFromStances(['a', 'b', 'c', 'd'], normalisedStancesOf(reply, ['a', 'b', 'c', 'd'])!).map((x) => x?.key ?? null)).toEqual(['S1', 'S1', 'S1-2', 'unplaced-d']);
    expect(normalisedStancesOf({ recommendation: 0.8 }, ['a'])).toBeNull();
  });

  it('reads the agents a judge was asked to group from the schema it was sent', () => {
    const format = { type: 'object', properties: { stances: { type: 'array', items: { type: 'object', properties: { agents: { type: 'array', items: { type: 'string', enum: ['a', 'c'] } } } } } } };
    expect(judgedIdsOf(format)).toEqual(['a', 'c']);
    expect(judgedIdsOf({ type: 'object', properties: { recommendation: { type: 'integer' } } })).toBeNull();
    expect(judgedIdsOf(null)).toBeNull();
  });

  it('runs the majority rules over stances', () => {
    const votes = votesFromStances(AGENTS, stancesOf(judgeReply)!);
    const t: Trajectory = { ...trajectory({ rounds: [[null, null, null]], maxRounds: 0 }), basis: { kind: 'stances' } };
    t.rounds[0]!.votes = votes;
    expect(decided('majority:round0', t).vote).toEqual({ key: 's1', text: 'Use Postgres' });
    expect(decided('ems:panel', t).spent.calls).toBe(2);
  });

  it('says the majority rules are unavailable, and why, when no stances were recorded', () => {
    const t = trajectory({ rounds: [[null, null, null]], maxRounds: 0, basis: { kind: 'none', why: 'unavailable: no stances recorded' } });
    for (const name of ['majority:final', 'majority:round0', 'stop:unanimous', 'free-mad', 'ems:panel']) {
      expect(decide(name, t)).toEqual({ available: false, why: 'unavailable: no stances recorded' });
    }
    expect(decided('synthesizer', t).vote?.text).toBe('9');
  });
});

describe('the rule set', () => {
  it('lists every family with unique names, the fixed-round rules from 0 to the ceiling', () => {
    const names = allRules({ maxRounds: 2 }).map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['stop:recorded', 'stop:threshold@0.60', 'stop:threshold@0.95', 'stop:rounds=0', 'stop:rounds=2', 'stop:unanimous', 'stop:settled', 'synthesizer', 'majority:final', 'majority:round0', 'majority:round=1', 'free-mad', 'cluster-vote', 'ems:panel', 'ems:reliability']));
    expect(names).not.toContain('stop:rounds=3');
  });
});

describe('the Pareto front of a run', () => {
  it('keeps the rules no other rule beats on both accuracy and tokens', async () => {
    const { paretoFront } = await import('../../src/bench/rescore.js');
    const fig = (rule: string, accuracy: number | null, tokensPerItem: number | null) => ({ rule, accuracy, tokensPerItem }) as Parameters<typeof paretoFront>[0][number];
    const front = paretoFront([fig('cheap', 0.6, 100), fig('dominated', 0.6, 200), fig('best', 0.9, 300), fig('tie-costlier', 0.9, 400), fig('middle', 0.7, 150), fig('none', null, null)]);
    expect(front.map((f) => f.rule)).toEqual(['cheap', 'middle', 'best']);
  });
});

describe('the best rule at the own scoring\'s compute', () => {
  const fig = (rule: string, accuracy: number | null, tokensPerItem: number | null, n = 4) => ({ rule, label: rule, accuracy, tokensPerItem, n, items: 4 }) as import('../../src/bench/rescore.js').RuleFigure;

  it('is the most accurate rule that decided every item within the own scoring\'s tokens per item', async () => {
    const { bestAtOwnCompute } = await import('../../src/bench/rescore.js');
    const own = fig('synthesizer', 0.5, 300);
    expect(bestAtOwnCompute([fig('cheap', 0.6, 100), fig('costlier', 0.9, 400), fig('partial', 1, 50, 3)], own)).toEqual({
      rule: 'cheap',
      label: 'cheap',
      accuracy: 0.6,
      tokensPerItem: 100,
      ownAccuracy: 0.5,
      ownTokensPerItem: 300,
    });
  });

  it('is none when the own scoring decided no item: there is no budget to hold the rules to', async () => {
    const { bestAtOwnCompute } = await import('../../src/bench/rescore.js');
    expect(bestAtOwnCompute([fig('cheap', 0.6, 100), fig('costly', 0.9, 1e9)], fig('synthesizer', null, null, 0))).toBeNull();
  });
});

describe('a debate asked outside a bench', () => {
  const debate = (judgeParsed: unknown[], steps?: { step: unknown }[], turn?: (round: number, agentId: string) => object) =>
    ({
      agents: [
        { id: 'a', role: 'debater' },
        { id: 'b', role: 'debater' },
        { id: 'c', role: 'debater' },
        { id: 'judge', role: 'judge' },
      ],
      turns: [0, 1].flatMap((round) => ['a', 'b', 'c'].map((agentId) => ({ round, agentId, status: 'ok', position: `${agentId} holds`, ...(turn?.(round, agentId) ?? {}) }))),
      calls: [
        ...[0, 1].flatMap((round) => ['a', 'b', 'c'].map((agentId) => ({ stage: round === 0 ? 'opening' : 'critique', round, agentId, status: 'ok', parsed: {}, metrics: { promptTokens: 10, completionTokens: 1, totalDurationNs: null }, startedAt: 0, finishedAt: 1000 }))),
        ...judgeParsed.map((parsed, round) => ({ stage: 'judge', round, agentId: 'judge', status: 'ok', parsed, metrics: { promptTokens: 5, completionTokens: 1, totalDurationNs: 2e9 }, startedAt: 0, finishedAt: 1 })),
      ],
      rounds: [
        { round: 0, convergence: 0.5 },
        { round: 1, convergence: 0.9 },
      ],
      synthesis: { status: 'ok', synthesis: { recommendation: 'Use Postgres' }, error: null },
      voting: null,
      ...(steps ? { steps } : {}),
      preset: { protocol: { kind: 'debate', maxRounds: 1, convergenceThreshold: 0.85 } },
      status: 'completed',
      exitReason: 'converged',
    }) as unknown as import('../../src/store/reader.js').StoredDebate;

  it('counts the judge\'s stances, round by round', async () => {
    const { openTrajectory } = await import('../../src/bench/rescore.js');
    const t = openTrajectory(
      debate([
        { stances: [{ id: 'pg', summary: 'Postgres', agents: ['a'] }, { id: 'lite', summary: 'SQLite', agents: ['b', 'c'] }] },
        { stances: [{ id: 'pg', summary: 'Postgres', agents: ['a', 'b', 'c'] }] },
      ]),
    );
    expect(t.basis.kind).toBe('stances');
    expect(decided('majority:round0', t).vote?.text).toBe('SQLite');
    expect(decided('stop:unanimous', t)).toMatchObject({ stopRound: 1, vote: { text: 'Postgres' } });
    expect(decided('synthesizer', t).vote?.text).toBe('Use Postgres');
    // The judge's reported duration is its GPU time; the agents' calls have none, so their wall time counts.
    expect(decided('stop:recorded', t).spent.gpuSeconds).toBeCloseTo(6 + 4, 6);
  });

  it('counts the stances the engine recorded for each round, not the judge\'s raw reply', async () => {
    const { openTrajectory } = await import('../../src/bench/rescore.js');
    const raw = { stances: [{ id: 'pg', summary: 'Postgres', agents: ['a', 'b', 'c'] }] };
    const recorded = (round: number, stances: { id: string; summary: string; agents: string[] }[]) => ({ step: { kind: 'stances', round, stances, majority: null, lineage: {}, agents: [], notes: [] } });
    const t = openTrajectory(
      debate(
        [raw, raw],
        [
          recorded(0, [{ id: 'pg', summary: 'Postgres', agents: ['a'] }, { id: 'lite', summary: 'SQLite', agents: ['b', 'c'] }]),
          recorded(1, [{ id: 'pg', summary: 'Postgres', agents: ['a'] }, { id: 'lite', summary: 'SQLite', agents: ['b', 'c'] }]),
        ],
      ),
    );
    expect(decided('majority:final', t).vote?.text).toBe('SQLite');
    expect(decided('stop:unanimous', t)).toMatchObject({ stopRound: 1, note: expect.stringMatching(/unanimity/) });
  });

  it('normalises the raw reply of a record without recorded stances, over the agents whose positions the judge read', async () => {
    const { openTrajectory } = await import('../../src/bench/rescore.js');
    const split = { stances: [{ id: 'S1', summary: 'Postgres', agents: ['a'] }, { id: 'S1', summary: 'SQLite', agents: ['b', 'c'] }] };
    const t = openTrajectory(debate([split, split]));
    expect(t.rounds.map((r) => r.votes.map((x) => x?.key ?? null))).toEqual([['S1', 'S1-2', 'S1-2'], ['S1', 'S1-2', 'S1-2']]);
    expect(decided('majority:final', t).vote?.text).toBe('SQLite');
    // c's turn of round 1 failed: the judge read only a and b, so c has no vote there whatever the reply says.
    const failed = openTrajectory(debate([split, split], undefined, (round, agentId) => (round === 1 && agentId === 'c' ? { status: 'failed', position: null } : {})));
    expect(failed.rounds[1]!.votes.map((x) => x?.key ?? null)).toEqual(['S1', 'S1-2', null]);
  });

  it('says the majority rules are unavailable when the judge recorded no stances', async () => {
    const { openTrajectory } = await import('../../src/bench/rescore.js');
    const t = openTrajectory(debate([{ recommendation: 0.5 }, { recommendation: 0.9 }]));
    expect(decide('majority:final', t)).toMatchObject({ available: false, why: expect.stringMatching(/^unavailable: no stances recorded/) });
    expect(decided('synthesizer', t).vote?.text).toBe('Use Postgres');
  });
});
