import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { extractAnswer } from '../../src/bench/extract.js';
import { benchAnswerSchemaFor } from '../../src/bench/prompts.js';
import { critiqueQuality, openingQuality } from '../../src/engine/runner.js';
import { parseReply } from '../../src/engine/structured-call.js';
import { type QualityRating, QUALITY_RULES, rateResult } from '../../src/protocol/quality.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import { critiqueSchemaFor, judgeSchema, openingSchema, synthesisSchemaFor } from '../../src/protocol/schemas.js';
import {
  type Claim,
  type Pair,
  assembleTensionMap,
  claimsReplySchema,
  clashReplySchemaFor,
  falseConsensusReview,
  mapDraftSchemaFor,
  normalizeClashReply,
  normalizeMapDraft,
  parseTensionMap,
  targetedReplySchema,
  tensionsFromClashes,
} from '../../src/protocol/tensions.js';
import { refineSchema, voteSchema } from '../../src/protocol/vote-prompts.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';

/**
 * For every stage, random instances of the exact JSON Schema Conclave sends (what
 * Ollama's grammar lets a model write) are accepted as they are, with no repair.
 */

const panel = ['pragmatist', 'architect', 'red-team', 'skeptic'];
const claims: Claim[] = panel.flatMap((agentId, i) => [1, 2].map((k) => ({ id: `C${i * 2 + k}`, agentId, text: `${agentId} claim ${k}`, source: 'model' as const })));
const byId = new Map(claims.map((c) => [c.id, c]));
const batch: Pair[] = [
  ['pragmatist', 'architect'],
  ['pragmatist', 'skeptic'],
  ['architect', 'red-team'],
];
const RUNS = { numRuns: 150 };

/** Every instance of the schema sent parses with no repair; `then` checks what the stage does with it. */
function acceptsEverything<T>(schema: z.ZodType<T>, normalize?: (value: T) => string[], then?: (value: T) => void): void {
  const sent = formatSchemaOf(schema);
  fc.assert(
    fc.property(arbitraryOf(sent), (instance) => {
      const parsed = parseReply(JSON.stringify(instance), schema, normalize);
      if (!parsed.ok) throw new Error(`refused ${JSON.stringify(instance).slice(0, 300)}: ${parsed.problem}`);
      then?.(parsed.value);
    }),
    RUNS,
  );
}

describe('every reply the grammar allows is usable', () => {
  it('opening', () => acceptsEverything(openingSchema, undefined, (v) => expect(v.confidence).toBeGreaterThanOrEqual(0)));

  it('critique, with `with` limited to the peers shown', () => {
    const peers = ['architect', 'red-team', 'skeptic'];
    acceptsEverything(critiqueSchemaFor(peers, peers), undefined, (v) => {
      for (const item of [...v.agreements, ...v.disagreements]) expect(peers).toContain(item.with);
      expect(v.confidence).toBeLessThanOrEqual(1);
    });
  });

  it('judge, with every score brought into 0..1', () =>
    acceptsEverything(judgeSchema, undefined, (v) => {
      for (const x of [v.recommendation, v.facts, v.caveats]) expect(x >= 0 && x <= 1).toBe(true);
    }));

  it('synthesis, with panelists, rounds held and the panel size bounding its fields', () =>
    acceptsEverything(synthesisSchemaFor(panel, 3), undefined, (v) => {
      expect(v.confidence.converged).toBeLessThanOrEqual(panel.length);
      for (const m of v.minorityPositions) {
        expect(panel).toContain(m.agent);
        expect(m.round).toBeLessThanOrEqual(3);
      }
    }));

  it('claims', () => acceptsEverything(claimsReplySchema(4)));

  it('clash: claims of the batch only, and a clash the pair rule rules out is dropped rather than refused', () => {
    const ids = claims.filter((c) => batch.flat().includes(c.agentId)).map((c) => c.id);
    acceptsEverything(
      clashReplySchemaFor(ids),
      (reply) => normalizeClashReply(reply, byId, batch),
      (reply) => {
        const tensions = tensionsFromClashes(reply.clashes, byId, panel);
        expect(tensions).toHaveLength(new Set(reply.clashes.map((c) => [c.claimA, c.claimB].sort().join())).size);
      },
    );
  });

  it('targeted round', () => acceptsEverything(targetedReplySchema));

  it('tension map draft, which then assembles into a valid map', () => {
    acceptsEverything(
      mapDraftSchemaFor(panel),
      (draft) => normalizeMapDraft(draft, { agents: panel, round2Outcome: 'narrowed', round2Question: 'Which holds?' }),
      (draft) => {
        const confidence = Object.fromEntries(draft.confidence.map((c) => [c.agent, c.confidence]));
        const review = falseConsensusReview({ answerTokens: 100, tensions: [], confidence, gaps: [] });
        const map = assembleTensionMap({ debateId: 'd', generatedAt: 0, agents: panel, claims, tensions: [], draft, exchange: null, review, pairsCompared: 6, pairsTotal: 6, gaps: [] });
        const checked = parseTensionMap(map, { agents: panel, claimIds: claims.map((c) => c.id) });
        if (!checked.ok) throw new Error(checked.problems.join('; '));
      },
    );
  });

  it('vote', () => acceptsEverything(voteSchema, undefined, (v) => expect(['YES', 'NO']).toContain(v.vote)));

  it('refinement', () => acceptsEverything(refineSchema));

  it('bench answers to number and choice items, which always read as an answer', () => {
    const number = { id: 'n', question: 'q', answer: '1', kind: 'number' as const };
    type Answer = z.ZodType<{ reasoning: string; answer: string | number }>;
    acceptsEverything(benchAnswerSchemaFor('number', 0) as Answer, undefined, (v) => expect(extractAnswer(JSON.stringify(v), 'number').value).not.toBeNull());
    const choice = { id: 'c', question: 'q', answer: 'B', kind: 'choice' as const, choices: ['w', 'x', 'y', 'z'] };
    acceptsEverything(benchAnswerSchemaFor('choice', 4) as Answer, undefined, (v) => expect(extractAnswer(JSON.stringify(v), 'choice', choice.choices).value).toBe(v.answer));
    expect(number.kind).toBe('number');
  });

  it('covers every enum value the schemas offer', () => {
    const seen = new Set<unknown>();
    const sent = formatSchemaOf(synthesisSchemaFor(panel, 3));
    fc.assert(
      fc.property(arbitraryOf(sent), (v) => {
        const s = v as { confidence: { level: string }; minorityPositions: { agent: string }[] };
        seen.add(s.confidence.level);
        for (const m of s.minorityPositions) seen.add(m.agent);
      }),
      { numRuns: 300 },
    );
    for (const value of ['high', 'medium', 'low', ...panel]) expect(seen).toContain(value);
  });
});

/** Whatever a call went through, as the runner reports it to the rating. */
const callFacts = fc.record({ repaired: fc.boolean(), cutAtLimit: fc.boolean(), truncatedPrompt: fc.boolean(), normalized: fc.nat(5) });

function wellFormed(r: QualityRating, retried: boolean): void {
  expect(Number.isInteger(r.score) && r.score >= 0 && r.score <= 100).toBe(true);
  expect(r.reasons.every((x) => typeof x === 'string' && x.length > 0)).toBe(true);
  if (retried) expect(r.action).not.toBe('RETRY');
  const byScore = r.score >= QUALITY_RULES.pass ? 'PASS' : r.score >= QUALITY_RULES.warn ? 'WARN' : r.score >= QUALITY_RULES.retry ? 'RETRY' : 'REJECT';
  expect(r.action === byScore || (retried && byScore === 'RETRY' && r.action === 'WARN')).toBe(true);
}

/** Rates every instance of the schema sent, long strings and confidence bounds included, as the runner would. */
function ratesEverything<T>(schema: z.ZodType<T>, facts: (value: T) => Parameters<typeof rateResult>[0]): void {
  const sent = formatSchemaOf(schema);
  fc.assert(
    fc.property(arbitraryOf(sent), callFacts, fc.boolean(), (instance, call, retried) => {
      const parsed = parseReply(JSON.stringify(instance), schema);
      if (!parsed.ok) throw new Error(parsed.problem);
      wellFormed(rateResult(facts(parsed.value), call, retried), retried);
    }),
    RUNS,
  );
}

describe('every reply the grammar allows gets a quality rating', () => {
  it('opening and sub-answer', () => ratesEverything(openingSchema, openingQuality([]).facts));

  it('critique, shown peers or none', () => {
    const peers = ['architect', 'red-team'];
    ratesEverything(critiqueSchemaFor(peers, peers), critiqueQuality([], 2).facts);
    ratesEverything(critiqueSchemaFor([], peers), critiqueQuality([], 0).facts);
  });

  it('rates the edges the schema allows: empty and huge strings, confidence 0 and 1', () => {
    const facts = openingQuality([]).facts;
    const clean = { repaired: false, cutAtLimit: false, truncatedPrompt: false, normalized: 0 };
    for (const position of ['x', ' ', '\u0000', 'a'.repeat(1_000_000), 'one two three '.repeat(100_000)]) {
      for (const reasoning of ['', 'b'.repeat(1_000_000)]) {
        for (const confidence of [0, 1]) wellFormed(rateResult(facts({ position, reasoning, confidence }), clean), false);
      }
    }
  });
});
