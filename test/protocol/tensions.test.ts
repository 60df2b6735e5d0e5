import { describe, expect, it } from 'vitest';
import {
  type Claim,
  type MapDraft,
  type Tension,
  type TensionMap,
  agentPairs,
  assembleTensionMap,
  batchPairs,
  normalizeClashReply,
  normalizeMapDraft,
  claimsFromAnswer,
  clashReplySchema,
  falseConsensusReview,
  headlineProblem,
  mapCallCount,
  numberClaims,
  parseTensionMap,
  round2Decision,
  round2Outcome,
  settleClashes,
  severityInBand,
  tensionsFromClashes,
  validateTensionMap,
} from '../../src/protocol/tensions.js';
import { targetedMessages } from '../../src/protocol/tension-prompts.js';

let n = 0;
function tension(overrides: Partial<Tension> = {}): Tension {
  n += 1;
  return {
    id: `T${n}`,
    agentA: 'a',
    agentB: 'b',
    claimAId: 'C1',
    claimBId: 'C2',
    claimA: 'x is true',
    claimB: 'x is false',
    type: 'factual',
    severity: 9,
    loadBearing: true,
    resolvable: true,
    recommendation: 'check x',
    resolution: 'open',
    ...overrides,
  };
}

const claims: Claim[] = numberClaims([
  { agentId: 'a', texts: ['a1', 'a2'], source: 'model' },
  { agentId: 'b', texts: ['b1'], source: 'model' },
  { agentId: 'c', texts: ['c1'], source: 'model' },
]);
const byId = new Map(claims.map((c) => [c.id, c]));

const draft: MapDraft = {
  headline: 'They agree on the plan but split on its cost.',
  consensus: [{ claim: 'do it', supportingAgents: ['a', 'b'], confidence: 0.8, loadBearing: true }],
  majorFindings: ['one', 'two', 'three'],
  openQuestions: ['what does it cost?'],
  confidence: [
    { agent: 'a', confidence: 0.7 },
    { agent: 'b', confidence: 0.6 },
    { agent: 'c', confidence: 0.5 },
  ],
};

function sampleMap(overrides: Partial<TensionMap> = {}): TensionMap {
  const tensions = tensionsFromClashes(
    [{ claimA: 'C1', claimB: 'C3', type: 'factual', severity: 9, loadBearing: true, resolvable: true, recommendation: 'measure' }],
    byId,
    ['a', 'b', 'c'],
  );
  const map = assembleTensionMap({
    debateId: 'd1',
    generatedAt: 0,
    agents: ['a', 'b', 'c'],
    claims,
    tensions,
    draft,
    exchange: null,
    review: { flagged: false, reasons: [], answerTokens: 100 },
    pairsCompared: 3,
    pairsTotal: 3,
    gaps: [],
  });
  return { ...map, ...overrides };
}

describe('clash classification', () => {
  it('keeps each severity inside its type band: factual 8-10, interpretive 4-7, emphasis 1-3', () => {
    expect(severityInBand('factual', 5)).toBe(8);
    expect(severityInBand('factual', 10)).toBe(10);
    expect(severityInBand('interpretive', 9)).toBe(7);
    expect(severityInBand('interpretive', 2)).toBe(4);
    expect(severityInBand('emphasis', 8)).toBe(3);
    expect(severityInBand('emphasis', 1)).toBe(1);
  });

  it('numbers tensions from the most severe, orders each pair by panel order and keeps a repeated claim pair once', () => {
    const tensions = tensionsFromClashes(
      [
        { claimA: 'C4', claimB: 'C1', type: 'emphasis', severity: 9, loadBearing: false, resolvable: false, recommendation: 'r1' },
        { claimA: 'C3', claimB: 'C2', type: 'interpretive', severity: 5, loadBearing: true, resolvable: true, recommendation: 'r2' },
        { claimA: 'C2', claimB: 'C3', type: 'interpretive', severity: 6, loadBearing: true, resolvable: true, recommendation: 'r3' },
        { claimA: 'C1', claimB: 'C3', type: 'factual', severity: 8, loadBearing: true, resolvable: true, recommendation: 'r4' },
      ],
      byId,
      ['a', 'b', 'c'],
    );
    expect(tensions.map((t) => [t.id, t.type, t.severity, t.agentA, t.agentB, t.recommendation])).toEqual([
      ['T1', 'factual', 8, 'a', 'b', 'r4'],
      ['T2', 'interpretive', 6, 'a', 'b', 'r3'],
      ['T3', 'emphasis', 3, 'a', 'c', 'r1'],
    ]);
    expect(tensions[2]!.claimAId).toBe('C1');
    expect(tensions[2]!.claimBId).toBe('C4');
  });

  it('drops, with a note, a clash that names an unknown claim, two claims of one agent, or a pair it was not asked about', () => {
    const clash = (claimA: string, claimB: string) => ({ claimA, claimB, type: 'factual' as const, severity: 9, loadBearing: true, resolvable: true, recommendation: 'r' });
    const pairs = [['a', 'b']] as const;
    const reply = clashReplySchema.parse({ clashes: [clash('C1', 'C3'), clash('C1', 'C99'), clash('C1', 'C2'), clash('C1', 'C4')] });
    const notes = normalizeClashReply(reply, byId, pairs);
    expect(reply.clashes.map((c) => [c.claimA, c.claimB])).toEqual([['C1', 'C3']]);
    expect(notes).toHaveLength(3);
    expect(notes.join('\n')).toMatch(/C99[\s\S]*two claims of a[\s\S]*a pair this call did not list/);
  });

  it('refuses a severity outside 1-10 and a type outside the three in model replies', () => {
    const base = { claimA: 'C1', claimB: 'C3', loadBearing: true, resolvable: true, recommendation: 'r' };
    expect(clashReplySchema.safeParse({ clashes: [{ ...base, type: 'factual', severity: 11 }] }).success).toBe(false);
    expect(clashReplySchema.safeParse({ clashes: [{ ...base, type: 'factual', severity: 0 }] }).success).toBe(false);
    expect(clashReplySchema.safeParse({ clashes: [{ ...base, type: 'moral', severity: 5 }] }).success).toBe(false);
    expect(clashReplySchema.safeParse({ clashes: [{ ...base, type: 'emphasis', severity: 2 }] }).success).toBe(true);
  });
});

describe('the Round 2 trigger', () => {
  it('never fires on emphasis clashes, however many and whatever the threshold', () => {
    const emphasis = [1, 2, 3].map(() => tension({ type: 'emphasis', severity: 3 }));
    expect(round2Decision(emphasis).fire).toBe(false);
    expect(round2Decision(emphasis, { minClashes: 1, minSeverity: 1 }).fire).toBe(false);
  });

  it('fires on two load-bearing factual clashes and targets the more severe', () => {
    const low = tension({ severity: 8 });
    const high = tension({ severity: 10, agentA: 'c', agentB: 'd' });
    const d = round2Decision([low, high]);
    expect(d.fire).toBe(true);
    expect(d.target?.id).toBe(high.id);
    expect(d.qualifying).toEqual([high.id, low.id]);
  });

  it('does not fire on a single high clash, nor count clashes that are not load-bearing or score under 6', () => {
    expect(round2Decision([tension({ severity: 10 })]).fire).toBe(false);
    expect(round2Decision([tension({ severity: 10 }), tension({ severity: 9, loadBearing: false })]).fire).toBe(false);
    expect(round2Decision([tension({ severity: 10 }), tension({ type: 'interpretive', severity: 5 })]).fire).toBe(false);
    expect(round2Decision([tension({ severity: 10 }), tension({ type: 'interpretive', severity: 6 })]).fire).toBe(true);
  });

  it('takes its numbers from the preset rule', () => {
    expect(round2Decision([tension({ severity: 10 })], { minClashes: 1, minSeverity: 6 }).fire).toBe(true);
    expect(round2Decision([tension({ severity: 8 }), tension({ severity: 8 })], { minClashes: 2, minSeverity: 9 }).fire).toBe(false);
  });

  it('prefers a clash more information could settle when two tie on severity', () => {
    const judgement = tension({ severity: 9, resolvable: false });
    const settleable = tension({ severity: 9, resolvable: true });
    expect(round2Decision([judgement, settleable]).target?.id).toBe(settleable.id);
  });

  it('counts a clash resolved when either side concedes, narrowed when one narrows, open otherwise', () => {
    expect(round2Outcome('maintain', 'concede')).toBe('resolved');
    expect(round2Outcome('narrow', 'maintain')).toBe('narrowed');
    expect(round2Outcome('maintain', 'maintain')).toBe('unresolved');
    expect(round2Outcome(null, 'concede')).toBe('unresolved');
  });
});

describe('the false-consensus guard', () => {
  it('flags a map with zero tensions drawn from answers longer than 800 tokens, and only then', () => {
    const long = falseConsensusReview({ answerTokens: 801, tensions: [], confidence: { a: 0.5 }, gaps: [] });
    expect(long.flagged).toBe(true);
    expect(long.reasons.map((r) => r.code)).toEqual(['long-answers-no-tensions']);
    expect(falseConsensusReview({ answerTokens: 800, tensions: [], confidence: { a: 0.5 }, gaps: [] }).flagged).toBe(false);
    expect(falseConsensusReview({ answerTokens: 5000, tensions: [tension({ type: 'emphasis', severity: 1 })], confidence: {}, gaps: [] }).flagged).toBe(false);
    expect(falseConsensusReview({ answerTokens: 500, tensions: [], confidence: {}, gaps: [] }, { longAnswerTokens: 400, maxConfidence: 0.85, minTensions: 3 }).flagged).toBe(true);
  });

  it('flags every agent rated above 0.85 on a contested question, but not on emphasis alone or at exactly 0.85', () => {
    const contested = [tension({ type: 'interpretive', severity: 5 })];
    expect(falseConsensusReview({ answerTokens: 10, tensions: contested, confidence: { a: 0.9, b: 0.86 }, gaps: [] }).reasons.map((r) => r.code)).toEqual([
      'overconfident-on-contested',
    ]);
    expect(falseConsensusReview({ answerTokens: 10, tensions: contested, confidence: { a: 0.9, b: 0.85 }, gaps: [] }).flagged).toBe(false);
    expect(falseConsensusReview({ answerTokens: 10, tensions: [tension({ type: 'emphasis', severity: 2 })], confidence: { a: 0.99 }, gaps: [] }).flagged).toBe(false);
  });

  it('flags one or two tensions on long answers the panel disagreed on at round 0, but not an agreed or short debate', () => {
    const one = [tension()];
    const few = falseConsensusReview({ answerTokens: 2400, tensions: one, confidence: {}, gaps: [], contested: true });
    expect(few.reasons.map((r) => r.code)).toEqual(['few-tensions']);
    expect(few.reasons[0]!.detail).toContain('only 1 tension');
    expect(falseConsensusReview({ answerTokens: 2400, tensions: [tension(), tension(), tension()], confidence: {}, gaps: [], contested: true }).flagged).toBe(false);
    expect(falseConsensusReview({ answerTokens: 2400, tensions: one, confidence: {}, gaps: [], contested: false }).flagged).toBe(false);
    expect(falseConsensusReview({ answerTokens: 500, tensions: one, confidence: {}, gaps: [], contested: true }).flagged).toBe(false);
  });

  it("flags a map that records neither consensus nor tension on an agent's main point", () => {
    const points = numberClaims([
      { agentId: 'a', texts: ['SQLite handles the current write load', 'backups are easy'], source: 'model' },
      { agentId: 'b', texts: ['The team lacks Postgres operations experience'], source: 'model' },
      { agentId: 'c', texts: ['Write volume doubles every quarter'], source: 'model' },
    ]);
    // a's main point is in a consensus zone a supports; c's is contested; b's appears nowhere.
    const consensus = [{ claim: 'SQLite copes with today’s load', supportingAgents: ['a', 'c'], confidence: 0.7, loadBearing: true }];
    const clash = [tension({ agentA: 'c', agentB: 'a', claimAId: points[3]!.id, claimBId: points[1]!.id })];
    const r = falseConsensusReview({ answerTokens: 10, tensions: clash, confidence: {}, gaps: [], claims: points, consensus });
    expect(r.reasons.map((x) => x.code)).toEqual(['uncovered-topics']);
    expect(r.reasons[0]).toMatchObject({ count: 1 });
    expect(r.reasons[0]!.detail).toContain('main point of b (C3');
    // A zone b supports that shares a content word with its point covers it.
    const covered = [...consensus, { claim: 'Postgres operations need training first', supportingAgents: ['b', 'a'], confidence: 0.6, loadBearing: false }];
    expect(falseConsensusReview({ answerTokens: 10, tensions: clash, confidence: {}, gaps: [], claims: points, consensus: covered }).flagged).toBe(false);
  });

  it('flags a map where some pairs were never compared', () => {
    const r = falseConsensusReview({ answerTokens: 10, tensions: [tension()], confidence: { a: 0.5 }, gaps: ['pairs a–b not compared'] });
    expect(r.reasons.map((x) => x.code)).toEqual(['incomplete-coverage']);
  });
});

describe('map validation', () => {
  it('accepts a sound map', () => {
    expect(parseTensionMap(sampleMap(), { agents: ['a', 'b', 'c'], claimIds: claims.map((c) => c.id) })).toMatchObject({ ok: true });
  });

  it('rejects a map that names an agent the debate does not have', () => {
    const map = sampleMap({ consensus: [{ claim: 'x', supportingAgents: ['a', 'ghost'], confidence: 0.5, loadBearing: true }] });
    const problems = validateTensionMap(map, { agents: ['a', 'b', 'c'] });
    expect(problems.join()).toContain('"ghost"');
    const profile = sampleMap();
    profile.synthesis.confidenceProfile = { a: 0.5, zed: 0.4 };
    expect(validateTensionMap(profile, { agents: ['a', 'b', 'c'] }).join()).toContain('"zed"');
  });

  it('rejects a tension whose claim does not exist or belongs to another agent', () => {
    const base = sampleMap();
    const unknown = sampleMap({ tensions: [{ ...base.tensions[0]!, claimBId: 'C42' }] });
    expect(validateTensionMap(unknown, { agents: ['a', 'b', 'c'] }).join()).toContain('"C42", which is not in this debate');
    const wrongOwner = sampleMap({ tensions: [{ ...base.tensions[0]!, claimBId: 'C4' }] });
    expect(validateTensionMap(wrongOwner, { agents: ['a', 'b', 'c'] }).join()).toContain('belongs to c, not b');
    expect(validateTensionMap(base, { agents: ['a', 'b', 'c'], claimIds: ['C1'] }).join()).toContain('which no extraction produced');
  });

  it('rejects a severity outside its band or outside 1-10, and a type outside the three', () => {
    const base = sampleMap();
    const t = base.tensions[0]!;
    expect(validateTensionMap(sampleMap({ tensions: [{ ...t, severity: 5 }] }), { agents: ['a', 'b', 'c'] }).join()).toContain('a factual clash scores 8-10');
    expect(parseTensionMap({ ...base, tensions: [{ ...t, severity: 12 }] }, { agents: ['a', 'b', 'c'] }).ok).toBe(false);
    expect(parseTensionMap({ ...base, tensions: [{ ...t, type: 'moral' }] }, { agents: ['a', 'b', 'c'] }).ok).toBe(false);
  });

  it('requires three to five major findings and per-agent confidence, never one score', () => {
    const base = sampleMap();
    expect(parseTensionMap({ ...base, synthesis: { ...base.synthesis, majorFindings: ['only one'] } }, { agents: ['a', 'b', 'c'] }).ok).toBe(false);
    expect(parseTensionMap({ ...base, synthesis: { ...base.synthesis, confidenceProfile: 0.8 } }, { agents: ['a', 'b', 'c'] }).ok).toBe(false);
  });
});

describe('the map draft', () => {
  const ctx = { agents: ['a', 'b', 'c'], round2Outcome: null };

  it('turns away hedged headlines', () => {
    expect(headlineProblem('It depends on the budget.')).toMatch(/hedges/);
    expect(headlineProblem('Both perspectives have merit.')).toMatch(/hedges/);
    expect(headlineProblem('The panel splits on cost.')).toBeNull();
  });

  it('keeps a draft as it is when there is nothing to settle', () => {
    const copy = structuredClone(draft);
    expect(normalizeMapDraft(copy, ctx)).toEqual([]);
    expect(copy).toEqual(draft);
  });

  it('drops a consensus zone left with one panelist and notes a panelist without a confidence', () => {
    const copy = structuredClone({ ...draft, consensus: [{ ...draft.consensus[0]!, supportingAgents: ['a', 'a'] }], confidence: draft.confidence.slice(0, 2) });
    const notes = normalizeMapDraft(copy, ctx);
    expect(copy.consensus).toEqual([]);
    expect(notes.join('\n')).toMatch(/consensus\[0\] dropped[\s\S]*no confidence given for c/);
  });

  it('adds the targeted question as open when the targeted round left its clash unresolved', () => {
    const none = { ...draft, openQuestions: [] };
    const narrowed = structuredClone(none);
    expect(normalizeMapDraft(narrowed, { ...ctx, round2Outcome: 'narrowed', round2Question: 'Which holds?' }).join()).toContain('openQuestions was empty');
    expect(narrowed.openQuestions).toEqual(['Which holds?']);
    const resolved = structuredClone(none);
    expect(normalizeMapDraft(resolved, { ...ctx, round2Outcome: 'resolved' })).toEqual([]);
  });
});

describe('claims and call counts', () => {
  it('takes claims an answer already lists and returns null when it lists none', () => {
    expect(claimsFromAnswer({ position: 'p', claims: ['x', { text: 'y' }, { claim: 'z' }, ''] })).toEqual(['x', 'y', 'z']);
    expect(claimsFromAnswer({ loadBearingClaims: ['w'] })).toEqual(['w']);
    expect(claimsFromAnswer({ position: 'p', reasoning: 'r', confidence: 0.5 })).toBeNull();
    expect(claimsFromAnswer(null)).toBeNull();
  });

  it('compares every pair of ten agents exactly once in nine clash calls of five pairs', () => {
    const agents = Array.from({ length: 10 }, (_, i) => `agent${i}`);
    const pairs = agentPairs(agents);
    expect(pairs).toHaveLength(45);
    const batches = batchPairs(pairs, 5);
    expect(batches).toHaveLength(9);
    expect(new Set(batches.flat().map(([a, b]) => `${a}|${b}`)).size).toBe(45);
    expect(mapCallCount(10, 5, { round2: true })).toEqual({ claims: 10, clashes: 9, targeted: 2, map: 1, total: 22 });
    expect(mapCallCount(3, 5)).toEqual({ claims: 3, clashes: 1, targeted: 0, map: 1, total: 5 });
  });
});

describe('the targeted exchange', () => {
  it('frames each clash by its type: only a factual clash is put as two claims that cannot both be true', () => {
    const prompt = (type: Tension['type']) => targetedMessages('Q?', null, tension({ type }), 'a').messages.at(-1)!.content;
    expect(prompt('factual')).toContain('cannot be true at the same time');
    expect(prompt('interpretive')).not.toContain('cannot be true');
    expect(prompt('interpretive')).toContain('reads the same facts differently');
    expect(prompt('emphasis')).not.toContain('cannot be true');
    expect(prompt('emphasis')).toContain('do not present it as settled fact');
  });

  it("puts the user's constraints before the clash, as outranking both panelists", () => {
    const content = targetedMessages('Q?', null, tension(), 'b', ['Runs offline']).messages.at(-1)!.content;
    expect(content).toContain("The user set these constraints; they outrank any panelist's view:\n- Runs offline");
    expect(targetedMessages('Q?', null, tension(), 'b').messages.at(-1)!.content).not.toContain('The user set these constraints');
  });
});

describe('settling clashes after a critique round', () => {
  it("counts each agent's first stance on a clash, so a repeat recorded before repeats were dropped settles nothing", () => {
    const t = tension({ id: 'T1' });
    const repeated = settleClashes([t], 1, [{ agentId: 'a', updates: [{ tension: 'T1', stance: 'maintain' }, { tension: 'T1', stance: 'concede' }] }]);
    expect(repeated.resolved).toEqual([]);
    const conceded = settleClashes([t], 1, [{ agentId: 'b', updates: [{ tension: 'T1', stance: 'concede' }, { tension: 'T1', stance: 'maintain' }] }]);
    expect(conceded.resolved).toEqual([{ id: 'T1', by: 'b' }]);
  });
});
