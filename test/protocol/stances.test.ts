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
  positionKeys,
  roundStancesOf,
} from '../../src/protocol/stances.js';
import { stanceRounds } from '../../src/render/panel-record.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';

const panel = ['alpha', 'beta', 'gamma', 'delta'];
const noTurns: never[] = [];

function rounds(...perRound: Stance[][]): RoundStances[] {
  const out: RoundStances[] = [];
  perRound.forEach((stances, round) => out.push(roundStancesOf({ round, stances, notes: [], panel, previous: out.at(-1) ?? null, earlier: out, turns: noTurns })));
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

  it('reads a panel the judge re-lettered, with every group unchanged, as nobody moving', () => {
    const r = rounds(
      [
        { id: 'A', summary: 'Use SQLite', agents: ['alpha', 'beta', 'gamma'] },
        { id: 'B', summary: 'Use Postgres', agents: ['delta'] },
      ],
      // The same groups, each under the other's letter.
      [
        { id: 'A', summary: 'Use Postgres', agents: ['delta'] },
        { id: 'B', summary: 'Use SQLite', agents: ['alpha', 'beta', 'gamma'] },
      ],
    );
    expect(r[1]!.agents.map((a) => `${a.agentId}:${a.stance}:${a.move}`)).toEqual(['alpha:B:held', 'beta:B:held', 'gamma:B:held', 'delta:A:held']);
    expect(r[1]!.lineage).toEqual({ A: 'B', B: 'A' });
    const f = conformityOf(r, panel.map((id) => family(id, 'llama')), ['alpha', 'beta', 'gamma']);
    expect(f).toMatchObject({ startMajority: 'A', outsideMajority: ['delta'], joinedMajority: [], majorityAdoption: 0, joins: [], movers: [] });
    expect(independenceOf(f).reason).toBe('agreement from 2 stances at round 0 rests on one model family (llama): not independent support');
  });

  it('reads the one agent that left its group as the only move, toward the group it joined, however the judge re-lettered them', () => {
    const r = rounds(
      [
        { id: 'A', summary: 'Use SQLite', agents: ['alpha', 'beta', 'gamma'] },
        { id: 'B', summary: 'Use Postgres', agents: ['delta'] },
      ],
      // gamma goes over to delta; the judge gives delta's group the letter A.
      [
        { id: 'A', summary: 'Use Postgres', agents: ['gamma', 'delta'] },
        { id: 'B', summary: 'Use SQLite', agents: ['alpha', 'beta'] },
      ],
    );
    expect(r[1]!.agents.map((a) => `${a.agentId}:${a.stance}:${a.move}`)).toEqual(['alpha:B:held', 'beta:B:held', 'gamma:A:left', 'delta:A:held']);
    expect(r[1]!.lineage).toEqual({ A: 'B', B: 'A' });
    const f = conformityOf(r, panel.map((id) => family(id, 'llama')), ['alpha', 'beta']);
    expect(f).toMatchObject({ movers: ['gamma'], joins: [], joinedMajority: [], majorityAdoption: 0 });
  });

  it('continues a split stance in its larger part and a merge in the group that brought the most agents', () => {
    const all = [{ id: 'S1', summary: 'A', agents: panel }];
    // Split: three stay together under a new letter, delta breaks away under the old one.
    const split = rounds(all, [
      { id: 'S1', summary: 'B', agents: ['delta'] },
      { id: 'S2', summary: 'A', agents: ['alpha', 'beta', 'gamma'] },
    ]);
    expect(split[1]!.agents.map((a) => a.move)).toEqual(['held', 'held', 'held', 'left']);
    expect(split[1]!.lineage).toEqual({ S1: null, S2: 'S1' });
    // Merge: alpha and beta, then gamma, then delta; the pair continues and the other two move.
    const merge = rounds(
      [
        { id: 'P', summary: 'A', agents: ['alpha', 'beta'] },
        { id: 'Q', summary: 'B', agents: ['gamma'] },
        { id: 'R', summary: 'C', agents: ['delta'] },
      ],
      [{ id: 'Q', summary: 'B', agents: panel }],
    );
    expect(merge[1]!.agents.map((a) => a.move)).toEqual(['held', 'held', 'joined', 'joined']);
    expect(merge[1]!.lineage).toEqual({ Q: 'P' });
    // An even split keeps the stance in the part with its summary.
    const even = rounds(all, [
      { id: 'X', summary: 'B', agents: ['alpha', 'beta'] },
      { id: 'Y', summary: 'A', agents: ['gamma', 'delta'] },
    ]);
    expect(even[1]!.agents.map((a) => a.move)).toEqual(['left', 'left', 'held', 'held']);
  });

  it('keeps an agent that sat a round out in its group, so the group it comes back to is matched with it', () => {
    const r = rounds(
      [
        { id: 'S1', summary: 'stay', agents: ['alpha', 'beta'] },
        { id: 'S2', summary: 'migrate', agents: ['gamma', 'delta'] },
      ],
      // alpha argues by assignment and is not judged.
      [
        { id: 'S1', summary: 'stay', agents: ['beta'] },
        { id: 'S2', summary: 'migrate', agents: ['gamma', 'delta'] },
      ],
      // beta's turn now; alpha is back, and gamma goes over to it.
      [
        { id: 'X', summary: 'stay put', agents: ['alpha', 'gamma'] },
        { id: 'Y', summary: 'move', agents: ['delta'] },
      ],
    );
    expect(r[2]!.agents.map((a) => `${a.agentId}:${a.move}`)).toEqual(['alpha:opened', 'beta:absent', 'gamma:left', 'delta:held']);
    expect(r[2]!.lineage).toEqual({ X: 'S1', Y: 'S2' });
  });

  it('keys a position the same in every round its group continues, and a new position apart from any earlier one', () => {
    const keys = positionKeys([
      { round: 0, stances: [{ id: 'A', summary: 'x', agents: ['alpha', 'beta'] }, { id: 'B', summary: 'y', agents: ['gamma', 'delta'] }] },
      { round: 1, stances: [{ id: 'A', summary: 'y', agents: ['gamma', 'delta'] }, { id: 'B', summary: 'x', agents: ['alpha', 'beta'] }] },
      // delta breaks away, and the judge calls its new position A.
      { round: 2, stances: [{ id: 'A', summary: 'z', agents: ['delta'] }, { id: 'B', summary: 'x', agents: ['alpha', 'beta'] }, { id: 'C', summary: 'y', agents: ['gamma'] }] },
    ]);
    expect([...keys.get(1)!]).toEqual([['A', 'B'], ['B', 'A']]);
    expect([...keys.get(2)!]).toEqual([['A', 'A@2'], ['B', 'A'], ['C', 'B']]);
  });

  it('reads a record whose moves were written by the judge\'s ids as a new one reads: re-lettered groups held', () => {
    const steps = [
      { kind: 'stances' as const, round: 0, stances: [{ id: 'A', summary: 'x', agents: ['alpha', 'beta', 'gamma'] }, { id: 'B', summary: 'y', agents: ['delta'] }], majority: 'A', lineage: { A: 'A', B: 'B' }, notes: [],
        agents: [{ agentId: 'alpha', stance: 'A', move: 'opened' as const, reasoned: null }, { agentId: 'beta', stance: 'A', move: 'opened' as const, reasoned: null }, { agentId: 'gamma', stance: 'A', move: 'opened' as const, reasoned: null }, { agentId: 'delta', stance: 'B', move: 'opened' as const, reasoned: null }] },
      // As an engine that carried stances over by id recorded it: everyone moved.
      { kind: 'stances' as const, round: 1, stances: [{ id: 'A', summary: 'y', agents: ['delta'] }, { id: 'B', summary: 'x', agents: ['alpha', 'beta', 'gamma'] }], majority: 'B', lineage: { A: 'A', B: 'B' }, notes: [],
        agents: [{ agentId: 'alpha', stance: 'B', move: 'left' as const, reasoned: true }, { agentId: 'beta', stance: 'B', move: 'left' as const, reasoned: true }, { agentId: 'gamma', stance: 'B', move: 'left' as const, reasoned: true }, { agentId: 'delta', stance: 'A', move: 'joined' as const, reasoned: false }] },
    ];
    const read = stanceRounds({ steps: steps.map((step, i) => ({ step, at: i })), turns: [] } as unknown as Parameters<typeof stanceRounds>[0]);
    expect(read[1]!.agents.map((a) => `${a.agentId}:${a.move}:${a.reasoned}`)).toEqual(['alpha:held:null', 'beta:held:null', 'gamma:held:null', 'delta:held:null']);
    expect(read[1]!.lineage).toEqual({ A: 'B', B: 'A' });
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
