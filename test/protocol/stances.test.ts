import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseReply } from '../../src/engine/structured-call.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import { judgeSchemaFor } from '../../src/protocol/schemas.js';
import {
  type AgentFamily,
  type RoundStances,
  type Stance,
  conformityOf,
  familyKey,
  independenceOf,
  inverseSimpson,
  majorityOf,
  normaliseStances,
  roundStancesOf,
} from '../../src/protocol/stances.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';

const panel = ['alpha', 'beta', 'gamma', 'delta'];
const noTurns: never[] = [];

function rounds(...perRound: Stance[][]): RoundStances[] {
  const out: RoundStances[] = [];
  perRound.forEach((stances, round) => out.push(roundStancesOf({ round, stances, notes: [], panel, previous: out.at(-1) ?? null, turns: noTurns })));
  return out;
}

const family = (agentId: string, f: string | null): AgentFamily => ({ agentId, model: `${f}:8b`, family: f, families: null, parameterSize: null, quantization: null, source: f ? 'server' : 'unknown' });

describe('the judge reply schema with stances', () => {
  it('declares stances after the score fields and limits its agents to the ids shown', () => {
    const sent = formatSchemaOf(judgeSchemaFor(['alpha', 'beta']));
    const required = sent.required as string[];
    expect(required.at(-1)).toBe('stances');
    expect(required.indexOf('stances')).toBe(Object.keys(sent.properties as object).indexOf('stances'));
    const items = (sent.properties as Record<string, { items: { properties: { agents: { items: { enum: string[] } } } } }>).stances!.items;
    expect(items.properties.agents.items.enum).toEqual(['alpha', 'beta']);
  });

  it('accepts every stances reply the grammar allows and normalises it so each agent sits in exactly one stance', () => {
    const ids = ['alpha', 'beta', 'gamma'];
    const schema = judgeSchemaFor(ids);
    fc.assert(
      fc.property(arbitraryOf(formatSchemaOf(schema), { long: false }), (instance) => {
        const parsed = parseReply(JSON.stringify(instance), schema);
        if (!parsed.ok) throw new Error(`refused ${JSON.stringify(instance).slice(0, 300)}: ${parsed.problem}`);
        const { stances, notes } = normaliseStances(parsed.value.stances, ids);
        const placed = stances.flatMap((s) => s.agents);
        expect([...placed].sort()).toEqual([...ids].sort());
        expect(new Set(stances.map((s) => s.id)).size).toBe(stances.length);
        expect(stances.every((s) => s.agents.length > 0)).toBe(true);
        // A reply that already placed everyone once, with distinct ids, is kept as it came, with no note.
        const once = parsed.value.stances.flatMap((s) => s.agents);
        const clean = once.length === ids.length && new Set(once).size === ids.length && new Set(parsed.value.stances.map((s) => s.id.trim())).size === parsed.value.stances.length && parsed.value.stances.every((s) => s.id.trim() === s.id && s.id !== '');
        if (clean) expect(notes).toEqual([]);
        else expect(notes.length).toBeGreaterThan(0);
        const r = roundStancesOf({ round: 0, stances, notes, panel: ids, previous: null, turns: noTurns });
        expect(r.agents.map((a) => a.move)).toEqual(['opened', 'opened', 'opened']);
      }),
      { numRuns: 200 },
    );
  });
});

describe('stance normalisation', () => {
  it('keeps an agent listed twice in its first stance, gives a left-out agent its own, drops an empty stance', () => {
    const { stances, notes } = normaliseStances(
      [
        { id: 'S1', summary: 'A', agents: ['alpha', 'beta'] },
        { id: 'S1', summary: 'B', agents: ['beta', 'gamma'] },
        { id: 'S3', summary: 'C', agents: ['alpha'] },
      ],
      ['alpha', 'beta', 'gamma', 'delta'],
    );
    expect(stances).toEqual([
      { id: 'S1', summary: 'A', agents: ['alpha', 'beta'] },
      { id: 'S1-2', summary: 'B', agents: ['gamma'] },
      { id: 'unplaced-delta', summary: 'not placed by the judge', agents: ['delta'] },
    ]);
    expect(notes.join('\n')).toMatch(/beta was in more than one stance/);
    expect(notes.join('\n')).toMatch(/stance S3 had no agent of its own: dropped/);
    expect(notes.join('\n')).toMatch(/delta was in no stance/);
  });
});

describe('trajectories and figures', () => {
  it('says who held, who joined the majority and who left it, and whether a move gave a reason', () => {
    const r0 = roundStancesOf({
      round: 0,
      stances: [
        { id: 'S1', summary: 'A', agents: ['alpha', 'beta', 'gamma'] },
        { id: 'S2', summary: 'B', agents: ['delta'] },
      ],
      notes: [],
      panel,
      previous: null,
      turns: noTurns,
    });
    expect(r0.majority).toBe('S1');
    // The judge renamed S1 to X: the most shared members carry it over.
    const r1 = roundStancesOf({
      round: 1,
      stances: [
        { id: 'X', summary: 'A', agents: ['alpha', 'beta', 'delta'] },
        { id: 'Y', summary: 'C', agents: ['gamma'] },
      ],
      notes: [],
      panel,
      previous: r0,
      turns: [
        { agentId: 'delta', critique: { disagreements: [] } },
        { agentId: 'gamma', critique: { disagreements: [{ reason: 'the cost grows' }] } },
      ],
    });
    expect(r1.agents).toEqual([
      { agentId: 'alpha', stance: 'X', move: 'held', reasoned: null },
      { agentId: 'beta', stance: 'X', move: 'held', reasoned: null },
      { agentId: 'gamma', stance: 'Y', move: 'left', reasoned: true },
      { agentId: 'delta', stance: 'X', move: 'joined', reasoned: false },
    ]);
    expect(r1.lineage).toEqual({ X: 'S1', Y: null });
    const f = conformityOf([r0, r1], panel.map((id) => family(id, 'llama')), ['alpha', 'beta', 'delta']);
    expect(f).toMatchObject({ stancesAtStart: 2, stancesAtEnd: 2, startMajority: 'S1', outsideMajority: ['delta'], joinedMajority: ['delta'], majorityAdoption: 1, heldFromStart: false });
    expect(f.effectivePositions).toBeCloseTo(1 / (0.75 ** 2 + 0.25 ** 2), 12);
    expect(f.joins).toEqual([{ agentId: 'delta', round: 1, reasoned: false }]);
  });

  it('computes the inverse Simpson index: 1 for one stance, n for n apart', () => {
    expect(inverseSimpson([{ id: 'a', summary: '', agents: panel }])).toBe(1);
    expect(inverseSimpson(panel.map((id) => ({ id, summary: '', agents: [id] })))).toBe(4);
    expect(majorityOf([{ id: 'a', summary: '', agents: ['alpha'] }, { id: 'b', summary: '', agents: ['beta'] }])).toBeNull();
  });

  it('counts independent support only across model families, or agreement that held from round 0', () => {
    const apart = [
      { id: 'S1', summary: 'A', agents: ['alpha', 'beta', 'gamma'] },
      { id: 'S2', summary: 'B', agents: ['delta'] },
    ];
    const together = [{ id: 'S1', summary: 'A', agents: panel }];
    const moved = rounds(apart, together);
    const oneFamily = panel.map((id) => family(id, id === 'delta' ? 'llama3' : 'llama'));
    const verdict = independenceOf(conformityOf(moved, oneFamily, panel));
    expect(verdict.independent).toBe(false);
    expect(verdict.reason).toMatch(/one model family \(llama\)/);
    const mixed = panel.map((id) => family(id, id === 'delta' ? 'qwen2' : 'llama'));
    expect(independenceOf(conformityOf(moved, mixed, panel)).independent).toBe(true);
    expect(independenceOf(conformityOf(rounds(together, together), oneFamily, panel))).toMatchObject({ independent: true });
    expect(independenceOf(conformityOf(moved, panel.map((id) => family(id, null)), panel)).reason).toMatch(/unknown model family/);
    expect(familyKey('Qwen3')).toBe('qwen');
  });

  it('counts as a move the change of an agent that sat a round out (a devil\'s advocate, a failed turn), so agreement did not hold from round 0', () => {
    const together = [{ id: 'S1', summary: 'A', agents: panel }];
    // Round 1: alpha argues by assignment and is not judged. Round 2: it is back, in a position of its own.
    const withoutAlpha = [{ id: 'S1', summary: 'A', agents: ['beta', 'gamma', 'delta'] }];
    const alphaApart = [
      { id: 'S1', summary: 'A', agents: ['beta', 'gamma', 'delta'] },
      { id: 'S2', summary: 'B', agents: ['alpha'] },
    ];
    const oneFamily = panel.map((id) => family(id, 'llama'));
    const away = conformityOf(rounds(together, withoutAlpha, alphaApart), oneFamily, panel);
    expect(away.movers).toEqual(['alpha']);
    expect(away.heldFromStart).toBe(false);
    expect(independenceOf(away)).toMatchObject({ independent: false });
    // Back in the stance it held: no move, and the agreement held.
    const back = conformityOf(rounds(together, withoutAlpha, together), oneFamily, panel);
    expect(back.movers).toEqual([]);
    expect(back.heldFromStart).toBe(true);
  });

  it('reads a mixture-of-experts or variant family as its lineage, so one lineage is never counted as two families', () => {
    for (const [a, b] of [['qwen3', 'qwen3moe'], ['qwen2', 'qwen2moe'], ['gemma3', 'gemma3n'], ['granite', 'granitemoe'], ['qwen2.5', 'qwen2.5vl'], ['glm4', 'glm4moe']] as [string, string][]) expect(familyKey(b)).toBe(familyKey(a));
    expect(familyKey('llama')).not.toBe(familyKey('gemma2'));
    expect(familyKey('mistral')).toBe('mistral');
    // A panel of Qwen3's dense and MoE models that moved to agree is one family: not independent support.
    const apart = [
      { id: 'S1', summary: 'A', agents: ['alpha', 'beta', 'gamma'] },
      { id: 'S2', summary: 'B', agents: ['delta'] },
    ];
    const moved = rounds(apart, [{ id: 'S1', summary: 'A', agents: panel }]);
    const qwen = panel.map((id) => family(id, id === 'delta' ? 'qwen3moe' : 'qwen3'));
    expect(independenceOf(conformityOf(moved, qwen, panel))).toMatchObject({ independent: false, reason: expect.stringMatching(/one model family \(qwen\)/) });
  });

  it('does not count agreement as held from round 0 when an agent first judged later opens in another position', () => {
    // delta had no usable turn at round 0 (a turn the budget skipped): the judge placed the other three together.
    const withoutDelta = [{ id: 'S1', summary: 'A', agents: ['alpha', 'beta', 'gamma'] }];
    const deltaApart = [...withoutDelta, { id: 'S2', summary: 'B', agents: ['delta'] }];
    const oneFamily = panel.map((id) => family(id, 'llama'));
    expect(conformityOf(rounds(withoutDelta, deltaApart), oneFamily, panel).heldFromStart).toBe(false);
    expect(conformityOf(rounds(withoutDelta, [{ id: 'S1', summary: 'A', agents: panel }]), oneFamily, panel).heldFromStart).toBe(true);
  });
});
