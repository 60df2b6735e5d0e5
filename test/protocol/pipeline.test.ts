import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseReply } from '../../src/engine/structured-call.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import {
  type Observation,
  applyDowngrade,
  artifactSchema,
  cleanObservations,
  findingsSchemaFor,
  observationsSchema,
  reduceFindings,
} from '../../src/protocol/pipeline.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';

const RUNS = { numRuns: 150 };
const obs = (id: string, over: Partial<Observation> = {}): Observation => ({ id, text: `${id} text`, confidence: 80, blocking: false, evidence: `${id} evidence`, downgraded: false, ...over });
const known = new Map([
  ['r1/R1', { agentId: 'r1', observation: obs('R1', { blocking: true }) }],
  ['r2/R1', { agentId: 'r2', observation: obs('R1', { confidence: 65, downgraded: true }) }],
]);

describe('pipeline replies: every reply the grammar allows is usable', () => {
  it('observations: clean ids (unique, safe), no blank text, confidence an integer 0–100, nothing blocking below 70', () => {
    fc.assert(
      fc.property(arbitraryOf(formatSchemaOf(observationsSchema)), (instance) => {
        const parsed = parseReply(JSON.stringify(instance), observationsSchema);
        if (!parsed.ok) throw new Error(`refused: ${parsed.problem}`);
        const { observations, notes } = cleanObservations(parsed.value.observations, 'agent');
        const judged = observations.map(applyDowngrade);
        expect(new Set(judged.map((o) => o.id)).size).toBe(judged.length);
        for (const o of judged) {
          expect(o.id).toMatch(/^[A-Za-z0-9_.-]{1,40}$/);
          expect(o.text).not.toBe('');
          expect(Number.isInteger(o.confidence) && o.confidence >= 0 && o.confidence <= 100).toBe(true);
          expect(o.blocking && o.confidence < 70).toBe(false);
          expect(o.blocking && o.evidence.trim() === '').toBe(false);
        }
        expect(observations.length + notes.filter((n) => n.includes('dropped')).length).toBe(parsed.value.observations.length);
      }),
      RUNS,
    );
  });

  it('findings: F1, F2, … blocking first, raised by a known agent or the filter, sources only among those shown', () => {
    const schema = findingsSchemaFor([...known.keys()]);
    fc.assert(
      fc.property(arbitraryOf(formatSchemaOf(schema)), (instance) => {
        const parsed = parseReply(JSON.stringify(instance), schema);
        if (!parsed.ok) throw new Error(`refused: ${parsed.problem}`);
        const { findings } = reduceFindings(parsed.value, known, 'filt');
        expect(findings.map((f) => f.id)).toEqual(findings.map((_, i) => `F${i + 1}`));
        const firstOpen = findings.findIndex((f) => !f.blocking);
        if (firstOpen >= 0) expect(findings.slice(firstOpen).every((f) => !f.blocking)).toBe(true);
        for (const f of findings) {
          expect(f.blocking && f.confidence < 70).toBe(false);
          expect(f.raisedBy.length).toBeGreaterThan(0);
          for (const who of f.raisedBy) expect(['r1', 'r2', 'filt']).toContain(who);
          for (const s of f.sources) expect(known.has(s)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('artifact', () => {
    fc.assert(
      fc.property(arbitraryOf(formatSchemaOf(artifactSchema)), (instance) => {
        expect(parseReply(JSON.stringify(instance), artifactSchema).ok).toBe(true);
      }),
      RUNS,
    );
  });
});

describe('pipeline normalisation', () => {
  it('names blank ids, renames repeated ones, strips odd characters, drops blank observations', () => {
    const raw = [
      { id: 'R1', text: 'one', confidence: 80, blocking: false, evidence: '' },
      { id: 'R1', text: 'two', confidence: 80, blocking: false, evidence: '' },
      { id: '  ', text: 'three', confidence: 80, blocking: false, evidence: '' },
      { id: 'a b/c\u001b', text: 'four', confidence: 80, blocking: false, evidence: '' },
      { id: 'R9', text: '   ', confidence: 80, blocking: false, evidence: '' },
    ];
    const { observations, notes } = cleanObservations(raw, 'rev');
    expect(observations.map((o) => [o.id, o.text])).toEqual([
      ['R1', 'one'],
      ['R1-2', 'two'],
      ['rev-3', 'three'],
      ['abc', 'four'],
    ]);
    expect(notes).toHaveLength(3);
  });

  it('downgrades blocking below 70 and keeps 70 and above', () => {
    expect(applyDowngrade(obs('a', { blocking: true, confidence: 65 }))).toMatchObject({ blocking: false, downgraded: true });
    expect(applyDowngrade(obs('a', { blocking: true, confidence: 70 }))).toMatchObject({ blocking: true, downgraded: false });
    expect(applyDowngrade(obs('a', { blocking: false, confidence: 10 }))).toMatchObject({ blocking: false, downgraded: false });
  });

  it('downgrades a blocking observation with no evidence, however confident', () => {
    expect(applyDowngrade(obs('a', { blocking: true, confidence: 95, evidence: '  ' }))).toMatchObject({ blocking: false, downgraded: true });
    expect(applyDowngrade(obs('a', { blocking: true, confidence: 95, evidence: 'line 12 drops the lock' }))).toMatchObject({ blocking: true, downgraded: false });
  });

  it('reduces findings: blocking first, unknown sources dropped with a note, who raised each from its sources, evidence from them when the filter gives none', () => {
    const { findings, downgraded, notes } = reduceFindings(
      {
        summary: 's',
        findings: [
          { text: 'guess', confidence: 65, blocking: true, evidence: '', sources: ['r2/R1'] },
          { text: 'sure', confidence: 90, blocking: true, evidence: 'quote', sources: ['r1/R1', 'r2/R1', 'none', 'r9/X'] },
          { text: '  ', confidence: 90, blocking: true, evidence: '', sources: [] },
          { text: 'own', confidence: 50, blocking: false, evidence: '', sources: [] },
        ],
      },
      known,
      'filt',
    );
    expect(findings.map((f) => [f.id, f.text, f.blocking, f.downgraded, f.raisedBy, f.evidence])).toEqual([
      ['F1', 'sure', true, false, ['r1', 'r2'], 'quote'],
      ['F2', 'guess', false, true, ['r2'], 'R1 evidence'],
      ['F3', 'own', false, false, ['filt'], ''],
    ]);
    expect(downgraded.map((f) => f.id)).toEqual(['F2']);
    expect(notes).toEqual(['finding 2: unknown sources r9/X ignored', 'finding 3 has no text and was dropped']);
  });
});
