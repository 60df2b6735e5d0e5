import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseReply } from '../../src/engine/structured-call.js';
import { type StatedConstraint, USER_AUTHOR, constraintKinds, constraintSection, mergeConstraints, statedInRounds, subjectKey, userConstraint } from '../../src/protocol/constraints.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import { openingSchema, synthesisSchemaFor } from '../../src/protocol/schemas.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';

const c = (kind: StatedConstraint['kind'], subject: string, detail = `${kind} ${subject}`): StatedConstraint => ({ kind, subject, detail });

describe('matching the subjects of constraints', () => {
  it('matches case, punctuation, stop words, word order and a plural s, and nothing looser', () => {
    const key = subjectKey('The PostgreSQL database');
    expect(key).toBe('database postgresql');
    expect(subjectKey('postgresql databases')).toBe(key);
    expect(subjectKey('Databases: PostgreSQL!')).toBe(key);
    expect(subjectKey('a  database for PostgreSQL')).toBe(key);
    expect(subjectKey('Postgres database')).not.toBe(key);
    expect(subjectKey('Café layer')).toBe(subjectKey('cafe layers'));
    // "class" keeps its double s; short words keep a final s.
    expect(subjectKey('the class')).toBe('class');
    expect(subjectKey('gas')).toBe('gas');
    expect(subjectKey('the of and')).toBe('');
  });
});

describe('merging the panel constraints', () => {
  it('collapses a constraint stated twice into one with both authors, and finds one side requiring what another prohibits', () => {
    const merge = mergeConstraints([
      { author: 'architect', constraint: c('requires', 'PostgreSQL database', 'Move to PostgreSQL within the year') },
      { author: 'pragmatist', constraint: c('prohibits', 'postgresql databases', 'No new database server to run') },
      { author: 'skeptic', constraint: c('requires', 'the PostgreSQL database', 'Plan the move now') },
      { author: 'pragmatist', constraint: c('prefers', 'typed data access layer') },
      { author: 'skeptic', constraint: c('prefers', 'Typed data-access layers') },
    ]);
    expect(merge.constraints).toHaveLength(3);
    const requires = merge.constraints.find((m) => m.kind === 'requires')!;
    expect(requires.authors).toEqual(['architect', 'skeptic']);
    expect(requires.details).toEqual(['Move to PostgreSQL within the year', 'Plan the move now']);
    expect(merge.constraints.find((m) => m.kind === 'prefers')!.authors).toEqual(['pragmatist', 'skeptic']);
    expect(merge.collisions).toEqual([
      {
        id: 'C1',
        subject: 'PostgreSQL database',
        key: 'database postgresql',
        requires: { authors: ['architect', 'skeptic'], details: ['Move to PostgreSQL within the year', 'Plan the move now'] },
        prohibits: { authors: ['pragmatist'], details: ['No new database server to run'] },
        userBinding: false,
      },
    ]);
    const section = constraintSection(merge)!;
    expect(section).toContain('- C1 on "PostgreSQL database": architect, skeptic requires it (Move to PostgreSQL within the year / Plan the move now); pragmatist prohibits it (No new database server to run).');
    expect(section).toContain('"collisionResolutions"');
  });

  it("reads a user's \"never …\" as a prohibition and \"prefer …\" as a soft preference, and any other text as a requirement", () => {
    expect(userConstraint('never send data off the machine')).toEqual({ kind: 'prohibits', subject: 'send data off the machine', detail: 'never send data off the machine' });
    expect(userConstraint('Do not add a database server')).toMatchObject({ kind: 'prohibits', subject: 'add a database server' });
    expect(userConstraint('No cloud services')).toMatchObject({ kind: 'prohibits', subject: 'cloud services' });
    expect(userConstraint('prefer open-source tools')).toMatchObject({ kind: 'prefers', subject: 'open-source tools' });
    expect(userConstraint('Budget under 10k EUR')).toEqual({ kind: 'requires', subject: 'Budget under 10k EUR', detail: 'Budget under 10k EUR' });
    // A bare lead word is not a constraint about nothing.
    expect(userConstraint('never')).toMatchObject({ kind: 'requires', subject: 'never' });
  });

  it("lets a user's prohibition overrule an agent's requirement on the same subject, and tells the synthesizer which side wins", () => {
    const merge = mergeConstraints([{ author: 'architect', constraint: c('requires', 'cloud services', 'Use a managed queue') }], ['No cloud services']);
    expect(merge.constraints[0]).toMatchObject({ kind: 'prohibits', authors: [USER_AUTHOR] });
    expect(merge.collisions).toHaveLength(1);
    expect(merge.collisions[0]).toMatchObject({ userBinding: true, userSide: 'prohibits' });
    expect(constraintSection(merge)).toContain('The user prohibits it: leave it out.');
    // A user's preference is soft: it never collides with an agent's prohibition.
    expect(mergeConstraints([{ author: 'architect', constraint: c('prohibits', 'open-source tools') }], ['prefer open-source tools']).collisions).toEqual([]);
  });

  it('puts the user constraints first, as requirements that outrank the agents', () => {
    const merge = mergeConstraints([{ author: 'architect', constraint: c('prohibits', 'budget under 10k EUR') }], ['Budget under 10k EUR']);
    expect(merge.constraints[0]).toMatchObject({ kind: 'requires', authors: [USER_AUTHOR] });
    expect(merge.collisions).toHaveLength(1);
    expect(merge.collisions[0]!.userBinding).toBe(true);
    expect(constraintSection(merge)).toContain('the user requires it (Budget under 10k EUR); architect prohibits it');
    expect(constraintSection(merge)).toContain('The user requires it: keep it.');
  });

  it('does not call a preference against a prohibition a collision', () => {
    expect(mergeConstraints([{ author: 'a', constraint: c('prefers', 'cache') }, { author: 'b', constraint: c('prohibits', 'caches') }]).collisions).toEqual([]);
  });

  it('keeps each agent at its latest turn that stated anything', () => {
    const turn = (agentId: string, round: number, constraints?: StatedConstraint[], tradeOffs?: string[]) => ({
      agentId,
      status: 'ok',
      opening: round === 0 ? { constraints, tradeOffs } : null,
      critique: round > 0 ? { constraints, tradeOffs } : null,
    });
    const stated = statedInRounds(
      [
        { turns: [turn('a', 0, [c('requires', 'x')], ['speed over cost']), turn('b', 0, [c('requires', 'y')])] },
        { turns: [turn('a', 1, [c('prohibits', 'x')]), turn('b', 1)] },
      ],
      ['a', 'b'],
    );
    expect(stated.constraints.map((s) => `${s.author} ${s.constraint.kind} ${s.constraint.subject}`)).toEqual(['a prohibits x', 'b requires y']);
    expect(stated.tradeOffs).toEqual([{ agentId: 'a', tradeOff: 'speed over cost' }]);
  });

  it('merges any constraints the answers schema allows into a well-formed set', () => {
    const answer = arbitraryOf(formatSchemaOf(openingSchema)) as fc.Arbitrary<{ constraints?: StatedConstraint[] }>;
    const authors = fc.constantFrom('a', 'b', 'c', 'd');
    fc.assert(
      fc.property(fc.array(fc.tuple(authors, answer), { maxLength: 6 }), fc.array(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 2 }), (answers, user) => {
        const stated = answers.flatMap(([author, a]) => (a.constraints ?? []).map((constraint) => ({ author, constraint })));
        const merge = mergeConstraints(stated, user);
        expect(merge.collisions.map((k) => k.id)).toEqual(merge.collisions.map((_, i) => `C${i + 1}`));
        for (const k of merge.collisions) {
          expect(merge.constraints.some((m) => m.key === k.key && m.kind === 'requires')).toBe(true);
          expect(merge.constraints.some((m) => m.key === k.key && m.kind === 'prohibits')).toBe(true);
          expect(k.userBinding).toBe(k.requires.authors.includes(USER_AUTHOR));
        }
        // Each (subject, kind) appears once, and every statement with a subject is kept under it.
        expect(new Set(merge.constraints.map((m) => `${m.kind} ${m.key}`)).size).toBe(merge.constraints.length);
        for (const s of stated) {
          const key = subjectKey(s.constraint.subject);
          if (key !== '') expect(merge.constraints.find((m) => m.key === key && m.kind === s.constraint.kind)?.authors).toContain(s.author);
        }
        expect(constraintKinds).toEqual(expect.arrayContaining(merge.constraints.map((m) => m.kind)));
      }),
      { numRuns: 150 },
    );
  });

  it('accepts every synthesis the grammar allows when it must resolve collisions, ids limited to them', () => {
    const schema = synthesisSchemaFor(['a', 'b', 'c'], 2, ['C1', 'C2']);
    const sent = formatSchemaOf(schema);
    fc.assert(
      fc.property(arbitraryOf(sent), (instance) => {
        const parsed = parseReply(JSON.stringify(instance), schema);
        if (!parsed.ok) throw new Error(`refused ${JSON.stringify(instance).slice(0, 300)}: ${parsed.problem}`);
        const resolutions = parsed.value.collisionResolutions ?? [];
        expect(resolutions.length).toBeGreaterThan(0);
        for (const r of resolutions) expect(['C1', 'C2']).toContain(r.collision);
      }),
      { numRuns: 150 },
    );
    expect((sent as { required?: string[] }).required).toContain('collisionResolutions');
  });
});
