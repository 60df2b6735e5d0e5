import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { generateFromSchema } from '../../src/sim/index.js';

describe('generateFromSchema', () => {
  it('produces instances that a zod-generated schema accepts, for many seeds', () => {
    const schema = z.object({
      verdict: z.enum(['agree', 'disagree']),
      score: z.number().int().min(1).max(10),
      ratio: z.number().gt(0).lt(1),
      points: z.array(z.string().min(3).max(40)).min(1).max(2),
      nested: z.object({ ok: z.boolean(), note: z.string().optional() }),
      maybe: z.string().nullable(),
      email: z.email(),
      fixed: z.literal('v1'),
    });
    const json = z.toJSONSchema(schema);
    for (let seed = 0; seed < 50; seed++) {
      expect(() => schema.parse(generateFromSchema(json, seed))).not.toThrow();
    }
  });

  it('returns the same instance for the same seed', () => {
    const json = z.toJSONSchema(z.object({ a: z.string(), b: z.array(z.number()) }));
    expect(generateFromSchema(json, 7)).toEqual(generateFromSchema(json, 7));
  });

  it('follows $ref into $defs and stops recursing in self-referencing schemas', () => {
    interface Node {
      label: string;
      children: Node[];
    }
    const node: z.ZodType<Node> = z.lazy(() => z.object({ label: z.string(), children: z.array(node) }));
    const json = z.toJSONSchema(z.object({ root: node }));
    for (let seed = 0; seed < 10; seed++) {
      const value = generateFromSchema(json, seed) as { root: Node };
      expect(typeof value.root.label).toBe('string');
      expect(() => z.object({ root: node }).parse(value)).not.toThrow();
    }
  });

  it('respects string length bounds and array item bounds', () => {
    const value = generateFromSchema({
      type: 'object',
      required: ['s', 'list'],
      properties: {
        s: { type: 'string', minLength: 60, maxLength: 80 },
        list: { type: 'array', items: { type: 'integer', minimum: 5, maximum: 5 }, minItems: 3 },
      },
    }) as { s: string; list: number[] };
    expect(value.s.length).toBeGreaterThanOrEqual(60);
    expect(value.s.length).toBeLessThanOrEqual(80);
    expect(value.list).toEqual([5, 5, 5]);
  });
});
