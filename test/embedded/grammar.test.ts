import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { benchAnswerSchemaFor } from '../../src/bench/prompts.js';
import { schemaToGbnf, integerRange } from '../../src/embedded/gbnf.js';
import { engine } from '../../src/embedded/engine.js';
import { decodeAsGrammar } from '../../src/embedded/grammar-text.js';
import * as advice from '../../src/protocol/advice.js';
import * as decompose from '../../src/protocol/decompose.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import * as pipeline from '../../src/protocol/pipeline.js';
import * as schemas from '../../src/protocol/schemas.js';
import * as tensions from '../../src/protocol/tensions.js';
import * as tournament from '../../src/protocol/tournament.js';
import * as votes from '../../src/protocol/vote-prompts.js';

/** Every schema a call can send: the fixed ones each protocol module exports, and the per-call ones built from ids. */
function everySchema(): [string, z.ZodType][] {
  const modules: Record<string, unknown>[] = [advice, decompose, pipeline, schemas, tensions, tournament, votes];
  const fixed = modules.flatMap((m) => Object.entries(m)).filter((e): e is [string, z.ZodType] => e[1] instanceof z.ZodObject);
  const perCall: [string, z.ZodType][] = [
    ['critiqueSchemaFor', schemas.critiqueSchemaFor(['a', 'b'], ['c'], ['k1'])],
    ['synthesisSchemaFor', schemas.synthesisSchemaFor(['a', 'b', 'c'], 3, ['x'])],
    ['clashReplySchemaFor', tensions.clashReplySchemaFor(['c1', 'c2'])],
    ['mapDraftSchemaFor', tensions.mapDraftSchemaFor(['a', 'b'])],
    ['findingsSchemaFor', pipeline.findingsSchemaFor(['plan', 'a'])],
    ['benchAnswerSchemaFor', benchAnswerSchemaFor('choice', 4)],
    ['judgeSchemaFor', schemas.judgeSchemaFor(['a', 'b', 'c'])],
    ['adviceSchemaFor', advice.adviceSchemaFor(['debate', 'parallel'])],
    ['splitSchema', decompose.splitSchema(3)],
    ['claimsReplySchema', tensions.claimsReplySchema(4)],
    ['verdictSchema', tournament.verdictSchema('a', 'b')],
    ['clashFormatFor', tensions.clashFormatFor([[['a'], ['b']], [['a', 'c'], ['b']]])],
  ];
  return [...fixed, ...perCall];
}

describe('the embedded grammar', () => {
  it('writes every integer of a range and nothing else', () => {
    for (const [lo, hi] of [[0, 0], [0, 9], [1, 10], [0, 100], [-5, 5], [-120, -7], [7, 1234], [0, 2 ** 31]] as const) {
      const rule = integerRange(lo, hi);
      // Read the alternatives back as a regular expression: GBNF literals and classes are a subset of it.
      const re = new RegExp(`^(?:${rule.replace(/"/g, '').replace(/ /g, '')})$`);
      for (const n of [lo - 1, lo, hi, hi + 1, Math.floor((lo + hi) / 2), 0, -0, 10, 99, 100, 101]) {
        expect(re.test(String(n)), `${n} in ${lo}..${hi}: ${rule}`).toBe(n >= lo && n <= hi);
      }
      expect(re.test(`0${Math.max(1, lo)}`)).toBe(false);
    }
  });

  it('reads bytes that are not UTF-8 as the grammar counted them, keeping the JSON around them', () => {
    const bytes = Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x22, 0x7d, 0xc3, 0x28, 0x78, 0x22, 0x7d]);
    // The grammar took 0xE2 with the two bytes after it as one character, and 0xC3 with the byte after it: the string is `��x`.
    const text = decodeAsGrammar(bytes);
    expect(JSON.parse(text)).toEqual({ a: '\uFFFD\uFFFDx' });
    expect(decodeAsGrammar(new TextEncoder().encode('{"é":"日本🙂"}'))).toBe('{"é":"日本🙂"}');
  });

  it('is accepted by llama.cpp for every schema Conclave sends', { timeout: 120_000 }, async () => {
    const all = everySchema();
    expect(all.length).toBeGreaterThan(10);
    for (const [name, schema] of all) {
      const text = schemaToGbnf(formatSchemaOf(schema));
      await expect(engine.grammar(text), name).resolves.toBeDefined();
    }
  });

  it('writes required properties first, then the optional ones in order', () => {
    const text = schemaToGbnf({ type: 'object', properties: { reason: { type: 'string' }, vote: { type: 'string', enum: ['x'] } }, required: ['vote'] });
    const object = text.split('\n').find((line) => line.includes('"{" ws'))!;
    // The object names the required vote itself; the optional reason comes in the rule it ends with.
    expect(object).toContain('\\"vote\\"');
    expect(object).not.toContain('\\"reason\\"');
    const tail = /(\S+) ws "}"$/.exec(object)![1]!;
    expect(text.split('\n').find((line) => line.startsWith(`${tail} ::=`))).toContain('\\"reason\\"');
  });
});
